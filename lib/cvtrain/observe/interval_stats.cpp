// Interval accounting (see interval_stats.h).
#include "cvtrain/observe/interval_stats.h"

namespace cvtrain {

void IntervalStats::add_step(double data_wait_s, double comm_wait_s, int64_t images) {
  data_wait_s_ += data_wait_s;
  comm_wait_s_ += comm_wait_s;
  ++steps_;
  images_ += images;
}

}  // namespace cvtrain
