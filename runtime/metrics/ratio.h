// The one division of the metrics: counts over counts, 0 where there is nothing to divide
// by (the precision of a class never predicted, the recall of one never present), as
// scikit-learn and seqeval report it.
#pragma once

namespace scion::runtime {

inline double ratio(double num, double den) { return den == 0 ? 0.0 : num / den; }

}  // namespace scion::runtime
