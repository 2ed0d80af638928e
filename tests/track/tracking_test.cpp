// Experiment tracking without a server: the track.mlflow keys, where a run is tracked (recipe over
// MLflow's variables), metrics.jsonl lines as MLflow points, and a run folder's metrics followed
// across a new start's rotation, each line once.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "cvtrain/core/error.h"
#include "cvtrain/core/json_reader.h"
#include "cvtrain/recipe/recipe_loader.h"
#include "cvtrain/recipe/recipe_schema.h"
#include "cvtrain/track/metrics_tail.h"
#include "cvtrain/track/mlflow_client.h"
#include "cvtrain/track/tracking_settings.h"
#include "temp_dir.h"

using namespace cvtrain;
using cvtrain::testing::TempDir;

namespace {

LoadOptions without_paths(std::vector<std::string> overrides = {}) {
  LoadOptions options;
  options.overrides = std::move(overrides);
  options.check_paths = false;
  return options;
}

EnvironmentLookup environment(std::map<std::string, std::string> values) {
  return [values](const std::string& name) -> std::optional<std::string> {
    const auto it = values.find(name);
    return it == values.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

void append(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::app) << text; }

std::vector<std::string> keys_at(const std::vector<MetricPoint>& points) {
  std::vector<std::string> out;
  for (const MetricPoint& p : points) out.push_back(p.key + "@" + std::to_string(p.step));
  return out;
}

}  // namespace

TEST_CASE("track.mlflow reads a tags map, keeps it whole through base: and overrides, and prints it back", "[track]") {
  TempDir dir;
  const std::string path =
      dir.write("r.yaml",
                "data: {train: /d/train.gz}\ntrain: {global_batch: 8}\n"
                "track: {mlflow: {uri: 'http://tracking:5000', experiment: vit, tags: {team: vision, dataset: in1k}}}\n");
  const Recipe r = load_recipe(path, without_paths());
  CHECK(r.track.mlflow.uri == "http://tracking:5000");
  CHECK(r.track.mlflow.experiment == "vit");
  CHECK(r.track.mlflow.tags == std::map<std::string, std::string>{{"dataset", "in1k"}, {"team", "vision"}});
  CHECK_FALSE(r.track.mlflow.log_weights);
  const Recipe overridden = load_recipe(path, without_paths({"track.mlflow.tags={owner: ana}", "track.mlflow.log_weights=true"}));
  CHECK(overridden.track.mlflow.tags == std::map<std::string, std::string>{{"owner", "ana"}});
  CHECK(overridden.track.mlflow.log_weights);
  // What experiment trackers get as params: every key once, the map in YAML's flow style.
  std::map<std::string, std::string> values;
  for (const auto& [key, value] : recipe_values(r)) CHECK(values.emplace(key, value).second);
  CHECK(values.size() == recipe_keys().size());
  CHECK(values.at("track.mlflow.tags") == "{dataset: in1k, team: vision}");
  CHECK(values.at("train.global_batch") == "8");
  CHECK(values.at("track.mlflow.uri") == "http://tracking:5000");
  // recipe.yaml, read back, gives the same map.
  const std::string saved = dir.write("saved.yaml", recipe_to_yaml(r));
  CHECK(load_recipe(saved, without_paths()).track.mlflow.tags == r.track.mlflow.tags);
}

TEST_CASE("track.mlflow.uri takes an http(s) address or off, never credentials", "[track]") {
  CHECK_FALSE(value_problem("track.mlflow.uri", "https://mlflow.example.com/tracking").has_value());
  CHECK_FALSE(value_problem("track.mlflow.uri", "off").has_value());
  const auto scheme = value_problem("track.mlflow.uri", "file:./mlruns");
  REQUIRE(scheme);
  CHECK_THAT(*scheme, Catch::Contains("http://") && Catch::Contains("file:./mlruns"));
  const auto secret = value_problem("track.mlflow.uri", "http://ana:hunter2@mlflow:5000");
  REQUIRE(secret);
  CHECK_THAT(*secret, Catch::Contains("MLFLOW_TRACKING_USERNAME"));
  CHECK(secret->find("hunter2") == std::string::npos);
  CHECK(value_problem("track.mlflow.tags", "[a, b]").has_value());
}

TEST_CASE("where a run is tracked: the recipe over MLflow's variables, credentials from the environment alone", "[track]") {
  MlflowSpec spec;
  CHECK_FALSE(tracking_settings(spec, "runs/vit", environment({})).has_value());  // nothing named: no tracking

  const auto from_env = tracking_settings(spec, "runs/vit/",
                                          environment({{"MLFLOW_TRACKING_URI", "http://env:5000"},
                                                       {"MLFLOW_EXPERIMENT_NAME", "env-experiment"},
                                                       {"MLFLOW_TRACKING_TOKEN", "t0ken"},
                                                       {"MLFLOW_TRACKING_USERNAME", "ana"},
                                                       {"MLFLOW_TRACKING_PASSWORD", "pw"},
                                                       {kParentRunVariable, "parent123"}}));
  REQUIRE(from_env);
  CHECK(from_env->uri == "http://env:5000");
  CHECK(from_env->experiment == "env-experiment");
  CHECK(from_env->run_name == "vit");  // the output folder's name, trailing slash or not
  CHECK(from_env->credentials.token == "t0ken");
  CHECK(from_env->credentials.username == "ana");
  CHECK(from_env->credentials.password == "pw");
  CHECK(from_env->parent_run_id == "parent123");

  spec.uri = "http://recipe:5000";
  spec.experiment = "recipe-experiment";
  spec.run_name = "named";
  spec.tags = {{"team", "vision"}};
  const auto from_recipe = tracking_settings(spec, "runs/vit", environment({{"MLFLOW_TRACKING_URI", "http://env:5000"}}));
  REQUIRE(from_recipe);
  CHECK(from_recipe->uri == "http://recipe:5000");
  CHECK(from_recipe->experiment == "recipe-experiment");
  CHECK(from_recipe->run_name == "named");
  CHECK(from_recipe->tags == Tags{{"team", "vision"}});

  spec = MlflowSpec{};
  CHECK(tracking_settings(spec, "runs/vit", environment({{"MLFLOW_TRACKING_URI", "http://env:5000"}}))->experiment == "Default");
  spec.uri = "off";  // off wins over the variable
  CHECK_FALSE(tracking_settings(spec, "runs/vit", environment({{"MLFLOW_TRACKING_URI", "http://env:5000"}})).has_value());
  spec.uri.clear();  // a variable meant for MLflow's Python client (a local folder) is not cvtrain's: no tracking, no failure
  CHECK_FALSE(tracking_settings(spec, "runs/vit", environment({{"MLFLOW_TRACKING_URI", "file:./mlruns"}})).has_value());
  CHECK(without_credentials("https://ana:pw@mlflow:5000/x") == "https://mlflow:5000/x");
  CHECK(without_credentials("http://mlflow:5000/a@b") == "http://mlflow:5000/a@b");
}

TEST_CASE("a metrics line becomes KIND/KEY points at its step, null a NaN, and a resume line none", "[track]") {
  const JsonValue train =
      parse_json(R"({"kind": "train", "epoch": 1, "step": 20, "loss": 0.5, "lr": 0.1, "loss_scale": null, "note": "x"})", "t");
  const std::vector<MetricPoint> points = metric_points(train, 1234);
  CHECK(keys_at(points) == std::vector<std::string>{"train/epoch@20", "train/loss@20", "train/lr@20", "train/loss_scale@20"});
  CHECK(points[1].value == 0.5);
  CHECK(points[1].timestamp_ms == 1234);
  CHECK(std::isnan(points[3].value));
  CHECK(metric_points(parse_json(R"({"kind": "resume", "step": 20})", "r"), 0).empty());
  CHECK(keys_at(metric_points(parse_json(R"({"kind": "epoch", "epoch": 2, "step": 40, "top1": 0.9})", "e"), 0)) ==
        std::vector<std::string>{"epoch/epoch@40", "epoch/top1@40"});
}

TEST_CASE("a run folder's metrics are read in order, whole lines once, across a new start's rotation", "[track]") {
  TempDir dir;
  const std::string folder = dir.path().string();
  MetricsTail tail(folder);
  CHECK(tail.next(1000, 0).empty());  // no metrics yet
  CHECK(tail.at_end());
  dir.write("metrics.1.jsonl", "{\"kind\": \"train\", \"step\": 1, \"loss\": 3}\n");                          // an earlier start's
  dir.write("metrics.jsonl", "{\"kind\": \"train\", \"step\": 2, \"loss\": 2}\n{\"kind\": \"train\", \"st");  // a line being written
  CHECK(keys_at(tail.next(1000, 0)) == std::vector<std::string>{"train/loss@1", "train/loss@2"});
  CHECK(tail.at_end());
  append(folder + "/metrics.jsonl", "ep\": 3, \"loss\": 1}\n");  // the line completed
  CHECK(keys_at(tail.next(1000, 0)) == std::vector<std::string>{"train/loss@3"});
  CHECK(tail.next(1000, 0).empty());
  // A new start: its lines after the last read are still read from the rotated file, then the new one.
  append(folder + "/metrics.jsonl", "{\"kind\": \"train\", \"step\": 4, \"loss\": 0.5}\n");
  std::filesystem::rename(folder + "/metrics.jsonl", folder + "/metrics.2.jsonl");
  dir.write("metrics.jsonl", "{\"kind\": \"resume\", \"step\": 3}\n{\"kind\": \"train\", \"step\": 4, \"loss\": 0.4}\n");
  CHECK(keys_at(tail.next(1000, 0)) == std::vector<std::string>{"train/loss@4", "train/loss@4"});
  CHECK(tail.at_end());
  // A limit returns whole lines: the batch stops after the line that reaches it.
  append(folder + "/metrics.jsonl",
         "{\"kind\": \"train\", \"step\": 5, \"loss\": 0.3, \"lr\": 1}\n{\"kind\": \"train\", \"step\": 6, \"loss\": 0.2}\n");
  CHECK(keys_at(tail.next(1, 0)) == std::vector<std::string>{"train/loss@5", "train/lr@5"});
  CHECK(keys_at(tail.next(1, 0)) == std::vector<std::string>{"train/loss@6"});
  // A second reader of the finished folder (`cvtrain track`) reads every start's file in order.
  MetricsTail replay(folder);
  CHECK(keys_at(replay.next(1000, 0)) == std::vector<std::string>{"train/loss@1", "train/loss@2", "train/loss@3", "train/loss@4",
                                                                  "train/loss@4", "train/loss@5", "train/lr@5", "train/loss@6"});
}

TEST_CASE("the MLflow client reports an unreachable server as worth retrying, and hides credentials", "[track]") {
  // Port 9 on the loopback (discard) has no listener on a test machine: the connection is refused at once.
  MlflowClient client("http://user:secret@127.0.0.1:9", MlflowCredentials{}, 5);
  CHECK(client.address() == "http://127.0.0.1:9");
  try {
    client.experiment_id("x");
    FAIL("expected a TrackingError");
  } catch (const TrackingError& e) {
    CHECK(e.retryable());
    CHECK_THAT(e.what(), Catch::Contains("MLflow at http://127.0.0.1:9"));
    CHECK(std::string(e.what()).find("secret") == std::string::npos);
  }
}
