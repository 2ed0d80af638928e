// data.format: auto — which format a dataset path holds, told from the path as `cvtrain data
// inspect` tells it, so that a recipe needs to name its format only to override the guess.
#pragma once

#include <optional>
#include <string>

#include "cvtrain/recipe/recipe.h"

namespace cvtrain {

// A .csv, .tsv or .txt file: an image list (data.format list).
bool is_image_list_path(const std::string& path);

// A folder holding classes.txt is shards (`cvtrain data pack` writes it), any other folder an
// ImageFolder tree, a list's extension (.csv, .tsv, .txt) a list, a file that begins as IDX or
// gzip does, or is named as IDX files are (.gz, .idx, -ubyte), IDX; anything else, and a path
// not here that its name does not tell (`cvtrain check --no-paths`), nullopt.
std::optional<DataFormat> format_of_path(const std::string& path);

// task: segmentation's pairs: a split file under ImageSets/Segmentation/ is voc, a split folder
// under images/ with annotations/ beside it ade20k, under leftImg8bit/ with gtFine/ cityscapes, a
// .csv or .tsv file a list of image,mask rows, a folder of shards with pairs.txt (`cvtrain data
// pack` of pairs) shards; anything else nullopt.
std::optional<DataFormat> pairs_format_of_path(const std::string& path);
// The formats that hold segmentation pairs (list among them: a list of image,mask rows).
bool is_pairs_format(DataFormat format);
// What data.train takes under task: segmentation, for a path pairs_format_of_path does not tell.
std::string no_pairs_message(const std::string& path);

// Why an existing file that format_of_path does not tell is no dataset, with how it begins (a
// COCO annotation file's JSON, a ZIP archive) and what data.train takes.
std::string no_dataset_message(const std::string& path);

}  // namespace cvtrain
