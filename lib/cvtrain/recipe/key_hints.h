// Which recipe key (or choice) a user meant by a key cvtrain does not have: the same name in another section
// (train.lr), or what timm's train.py, torchvision's references, Lightning and Hugging Face call it
// (batch_size, learning_rate, num_workers, accumulate_grad_batches...), the names a first recipe is ported from.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace cvtrain {

// "did you mean 'optim.lr'?"-style advice for `unknown_key`, or nullopt when no such name fits.
// `recipe_keys` are all of cvtrain's keys.
std::optional<std::string> key_hint(const std::string& unknown_key, const std::vector<std::string>& recipe_keys);

// "cvtrain spells it 'fp16'"-style advice for a choice key's `value` that another tool spells so
// (Lightning's precision '16-mixed', strategy 'deepspeed_stage_2', torch's 'CosineAnnealingLR'...),
// or written in capitals; nullopt when nothing in `choices` fits.
std::optional<std::string> value_hint(const std::string& value, const std::vector<std::string>& choices);

// What a search space file's key or value written as Weights & Biases sweeps, Optuna or Ray Tune
// write it is here: "parameters" -> "W&B's parameters: is space: here, ...", "bayes" -> tpe,
// "maximize" -> max, {values: [...]} -> choice. nullopt for a name none of them uses.
std::optional<std::string> sweep_word_hint(const std::string& word);

// The recipe key each foreign name's hint leads with (for the test that they all exist).
std::vector<std::string> foreign_name_targets();

}  // namespace cvtrain
