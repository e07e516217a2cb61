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

std::vector<Dim> matmul_dims(std::vector<Dim> a, std::vector<Dim> b, bool trans_a, bool trans_b) {
  if (a.empty() || b.empty()) {
    fail("inputs must have rank >= 1, got shapes {} and {}", symbolic_shape_to_string(a),
         symbolic_shape_to_string(b));
  }
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (trans_a && !a_vector) std::swap(a[a.size() - 1], a[a.size() - 2]);
  if (trans_b && !b_vector) std::swap(b[b.size() - 1], b[b.size() - 2]);
  if (a_vector) a.insert(a.begin(), Dim::known(1));
  if (b_vector) b.push_back(Dim::known(1));
  const Dim& k_a = a.back();
  const Dim& k_b = b[b.size() - 2];
  if (k_a.is_known() && k_b.is_known() && k_a.value != k_b.value) {
    fail("inner dimensions differ: {} vs {}", k_a.value, k_b.value);
  }
  const std::vector<SymbolicShape> batches{std::vector<Dim>(a.begin(), a.end() - 2),
                                           std::vector<Dim>(b.begin(), b.end() - 2)};
  std::vector<Dim> out = *broadcast_shapes(batches);
  if (!a_vector) out.push_back(a[a.size() - 2]);
  if (!b_vector) out.push_back(b.back());
  return out;
}

}  // namespace onnxkit
