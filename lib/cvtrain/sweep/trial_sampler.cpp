// Grid, random and TPE draws. TPE is univariate, as Optuna's default: per key, Parzen estimators of
// the good (top quarter) and the other trials — Gaussians at each observed value with a bandwidth
// from the spread, plus the uniform prior — and the candidate with the highest ratio of the two.
#include "cvtrain/sweep/trial_sampler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cvtrain/core/rng.h"

namespace cvtrain {
namespace {

using Kind = SearchDimension::Kind;

constexpr int kCandidates = 24;  // Optuna's n_ei_candidates

std::string number_text(const SearchDimension& d, double value) {
  if (d.kind == Kind::kInt) return std::to_string(std::clamp<int64_t>(std::llround(value), static_cast<int64_t>(d.low), static_cast<int64_t>(d.high)));
  return fmt::format("{:.6g}", std::clamp(value, d.low, d.high));  // six digits are plenty for a search, and readable
}

// Ranges in the space the sampler works in: log for loguniform.
double to_internal(const SearchDimension& d, double v) { return d.kind == Kind::kLogUniform ? std::log(v) : v; }
double from_internal(const SearchDimension& d, double v) { return d.kind == Kind::kLogUniform ? std::exp(v) : v; }
double internal_low(const SearchDimension& d) { return to_internal(d, d.kind == Kind::kInt ? d.low - 0.5 : d.low); }
double internal_high(const SearchDimension& d) { return to_internal(d, d.kind == Kind::kInt ? d.high + 0.5 : d.high); }

std::string random_value(const SearchDimension& d, SplitMix64& rng) {
  if (d.kind == Kind::kChoice) return d.choices[rng.below(d.choices.size())];
  if (d.kind == Kind::kInt) return number_text(d, d.low + static_cast<double>(rng.below(static_cast<uint64_t>(d.high - d.low) + 1)));
  return number_text(d, from_internal(d, rng.uniform(internal_low(d), internal_high(d))));
}

// A Parzen estimator over one numeric key: a Gaussian at each point, the prior's uniform beside.
struct Parzen {
  std::vector<double> centres;
  double sigma = 1, low = 0, high = 1;
  double density(double x) const {
    const double prior = 1.0 / (high - low);
    double sum = prior;
    for (double c : centres) sum += std::exp(-0.5 * std::pow((x - c) / sigma, 2)) / (sigma * std::sqrt(2 * M_PI));
    return sum / static_cast<double>(centres.size() + 1);
  }
  double sample(SplitMix64& rng) const {
    const size_t component = rng.below(centres.size() + 1);
    if (component == centres.size()) return rng.uniform(low, high);
    for (int attempt = 0; attempt < 16; ++attempt) {  // a Gaussian truncated to the range
      const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
      const double x = centres[component] + sigma * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      if (x >= low && x <= high) return x;
    }
    return std::clamp(centres[component], low, high);
  }
};

Parzen parzen_of(const SearchDimension& d, std::vector<double> points) {
  Parzen p;
  p.low = internal_low(d);
  p.high = internal_high(d);
  p.centres = std::move(points);
  // Scott's rule on the range, narrowing as points accumulate, never below 1 % of the range.
  const double n = static_cast<double>(p.centres.size() + 1);
  p.sigma = std::max(0.01, std::pow(n, -0.2) / 2.0) * (p.high - p.low);
  return p;
}

std::string tpe_numeric(const SearchDimension& d, const std::vector<double>& good, const std::vector<double>& bad, SplitMix64& rng) {
  const Parzen l = parzen_of(d, good), g = parzen_of(d, bad);
  double best = l.sample(rng), best_ratio = -1;
  for (int i = 0; i < kCandidates; ++i) {
    const double x = l.sample(rng);
    const double ratio = l.density(x) / g.density(x);
    if (ratio > best_ratio) {
      best_ratio = ratio;
      best = x;
    }
  }
  return number_text(d, from_internal(d, best));
}

std::string tpe_choice(const SearchDimension& d, const std::vector<std::string>& good, const std::vector<std::string>& bad, SplitMix64& rng) {
  const auto weights = [&](const std::vector<std::string>& seen) {
    std::vector<double> w(d.choices.size(), 1.0);  // the prior: one observation of each
    for (const std::string& v : seen) {
      const auto it = std::find(d.choices.begin(), d.choices.end(), v);
      if (it != d.choices.end()) w[static_cast<size_t>(it - d.choices.begin())] += 1.0;
    }
    const double total = std::accumulate(w.begin(), w.end(), 0.0);
    for (double& x : w) x /= total;
    return w;
  };
  const std::vector<double> l = weights(good), g = weights(bad);
  size_t best = 0;
  double best_ratio = -1;
  for (int i = 0; i < kCandidates; ++i) {
    double left = rng.uniform();
    size_t k = 0;
    while (k + 1 < l.size() && left >= l[k]) left -= l[k++];
    if (l[k] / g[k] > best_ratio) {
      best_ratio = l[k] / g[k];
      best = k;
    }
  }
  return d.choices[best];
}

const std::string* value_of(const Assignment& a, const std::string& key) {
  for (const auto& [k, v] : a)
    if (k == key) return &v;
  return nullptr;
}

}  // namespace

std::vector<Assignment> grid_assignments(const SweepSpace& space) {
  std::vector<Assignment> grid{{}};
  for (const SearchDimension& d : space.dimensions) {
    std::vector<Assignment> next;
    for (const Assignment& partial : grid)
      for (const std::string& choice : d.choices) {
        Assignment a = partial;
        a.emplace_back(d.key, choice);
        next.push_back(std::move(a));
      }
    grid = std::move(next);
  }
  return grid;
}

std::optional<uint64_t> distinct_assignments(const SweepSpace& space) {
  uint64_t product = 1;
  for (const SearchDimension& d : space.dimensions) {
    if (d.kind == Kind::kUniform || d.kind == Kind::kLogUniform) return std::nullopt;
    const uint64_t n = d.kind == Kind::kChoice ? d.choices.size() : static_cast<uint64_t>(d.high - d.low) + 1;
    if (n > 0 && product > (uint64_t{1} << 40) / n) return std::nullopt;
    product *= n;
  }
  return product;
}

Assignment random_assignment(const SweepSpace& space, int64_t index) {
  SplitMix64 rng(sample_key(space.seed, 0x73776565ULL, static_cast<uint64_t>(index)));
  Assignment a;
  for (const SearchDimension& d : space.dimensions) a.emplace_back(d.key, random_value(d, rng));
  return a;
}

std::vector<Assignment> random_assignments(const SweepSpace& space, int64_t count) {
  const auto want = static_cast<size_t>(std::max<int64_t>(0, count));
  const size_t available = std::min<uint64_t>(want, distinct_assignments(space).value_or(want));
  std::vector<Assignment> drawn;
  // A continuous key's draws are all different but for rounding; the bound only ends a pathological case.
  for (int64_t draw = 0; drawn.size() < available && draw < 1000 + 100 * static_cast<int64_t>(want); ++draw) {
    Assignment a = random_assignment(space, draw);
    if (std::find(drawn.begin(), drawn.end(), a) == drawn.end()) drawn.push_back(std::move(a));
  }
  return drawn;
}

Assignment tpe_assignment(const SweepSpace& space, int64_t index, const std::vector<ScoredTrial>& finished, uint64_t attempt) {
  std::vector<const ScoredTrial*> scored;
  for (const ScoredTrial& t : finished)
    if (t.score) scored.push_back(&t);
  if (scored.size() < kTpeStartupTrials) return random_assignment(space, index + static_cast<int64_t>(attempt << 32));
  std::stable_sort(scored.begin(), scored.end(), [](const ScoredTrial* a, const ScoredTrial* b) {
    return a->progress != b->progress ? a->progress > b->progress : *a->score > *b->score;
  });
  const size_t good_count = std::max<size_t>(1, static_cast<size_t>(std::ceil(0.25 * static_cast<double>(scored.size()))));
  SplitMix64 rng(sample_key(space.seed, 0x747065ULL + (attempt << 24), static_cast<uint64_t>(index)));
  Assignment a;
  for (const SearchDimension& d : space.dimensions) {
    std::vector<std::string> good, bad;
    for (size_t i = 0; i < scored.size(); ++i)
      if (const std::string* v = value_of(scored[i]->assignment, d.key)) (i < good_count ? good : bad).push_back(*v);
    if (d.kind == Kind::kChoice) {
      a.emplace_back(d.key, tpe_choice(d, good, bad, rng));
      continue;
    }
    const auto internal = [&](const std::vector<std::string>& values) {
      std::vector<double> out;
      for (const std::string& v : values) out.push_back(to_internal(d, std::stod(v)));
      return out;
    };
    a.emplace_back(d.key, tpe_numeric(d, internal(good), internal(bad), rng));
  }
  return a;
}

std::optional<Assignment> untaken_tpe_assignment(const SweepSpace& space, int64_t index, const std::vector<ScoredTrial>& finished,
                                                 const std::vector<Assignment>& taken) {
  const auto is_taken = [&](const Assignment& a) { return std::find(taken.begin(), taken.end(), a) != taken.end(); };
  constexpr uint64_t kTries = 8;
  for (uint64_t attempt = 0; attempt < kTries; ++attempt) {
    Assignment a = tpe_assignment(space, index, finished, attempt);
    if (!is_taken(a)) return a;
  }
  for (Assignment& a : random_assignments(space, static_cast<int64_t>(taken.size()) + 1))
    if (!is_taken(a)) return std::move(a);
  return std::nullopt;
}

std::vector<std::string> overrides_of(const Assignment& assignment) {
  std::vector<std::string> out;
  for (const auto& [key, value] : assignment) out.push_back(key + "=" + value);
  return out;
}

}  // namespace cvtrain
