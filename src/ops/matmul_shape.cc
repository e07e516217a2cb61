#include "ops/matmul_shape.h"

#include <utility>

#include "core/status.h"
#include "ops/kernel.h"

namespace onnxkit {

MatMulShape matmul_shape(const Node& node, const Shape& a, const Shape& b, bool trans_a,
                         bool trans_b) {
  if (a.empty() || b.empty()) {
    fail_at(node, "inputs must have rank >= 1, got shapes {} and {}", shape_to_string(a),
            shape_to_string(b));
  }
  MatMulShape s;
  s.a = a;
  s.b = b;
  s.trans_a = trans_a && a.size() >= 2;
  s.trans_b = trans_b && b.size() >= 2;
  if (s.trans_a) std::swap(s.a[s.a.size() - 1], s.a[s.a.size() - 2]);
  if (s.trans_b) std::swap(s.b[s.b.size() - 1], s.b[s.b.size() - 2]);
  if (a.size() == 1) s.a.insert(s.a.begin(), 1);
  if (b.size() == 1) s.b.push_back(1);
  s.m = s.a[s.a.size() - 2];
  s.k = s.a.back();
  s.n = s.b.back();
  if (s.b[s.b.size() - 2] != s.k) {
    fail_at(node, "inner dimensions differ: A{} has shape {} and B{} has shape {} ({} vs {})",
            s.trans_a ? "^T" : "", shape_to_string(a), s.trans_b ? "^T" : "", shape_to_string(b),
            s.k, s.b[s.b.size() - 2]);
  }
  s.a_batch.assign(s.a.begin(), s.a.end() - 2);
  s.b_batch.assign(s.b.begin(), s.b.end() - 2);
  try {
    s.batch = broadcast_shapes(s.a_batch, s.b_batch);
  } catch (const Error&) {
    fail_at(node, "batch dimensions of shapes {} and {} do not broadcast", shape_to_string(a),
            shape_to_string(b));
  }
  s.out = s.batch;
  if (a.size() > 1) s.out.push_back(s.m);
  if (b.size() > 1) s.out.push_back(s.n);
  return s;
}

}  // namespace onnxkit
