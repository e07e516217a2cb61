#include "ops/attention_layout.h"

#include <algorithm>
#include <string>
#include <utility>

#include <fmt/ranges.h>

#include "ops/op_utils.h"

namespace onnxkit {

AttentionLayout::AttentionLayout(const KernelCreateContext& context)
    : k_transposed_(context.attr_int("k_transposed", 0) != 0) {
  const char* names[] = {"q_perm", "k_perm", "v_perm", "y_perm"};
  for (size_t i = 0; i < 4; ++i) {
    const std::vector<int64_t> perm = context.attr_ints(names[i], {0, 1, 2, 3});
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    if (sorted != std::vector<int64_t>{0, 1, 2, 3}) {
      context.fail("{} must be a permutation of [0, 1, 2, 3], got [{}]", names[i],
                   fmt::join(perm, ", "));
    }
    std::copy(perm.begin(), perm.end(), perms_[i].begin());
  }
}

AttentionView AttentionLayout::input_view(size_t input, const Shape& stored) const {
  const std::vector<int64_t> stored_strides = contiguous_strides(stored);
  // The operand is Transpose(stored, perm): its dim i is the stored dim perm[i].
  AttentionView view;
  for (size_t i = 0; i < 4; ++i) {
    view.dims[i] = stored[perms_[input][i]];
    view.strides[i] = stored_strides[perms_[input][i]];
  }
  if (input == 1 && k_transposed_) {  // K^T [B, H, D, Sk] read as K
    std::swap(view.dims[2], view.dims[3]);
    std::swap(view.strides[2], view.strides[3]);
  }
  return view;
}

Shape AttentionLayout::output_shape(const std::array<int64_t, 4>& logical) const {
  Shape stored(4);
  for (size_t j = 0; j < 4; ++j) stored[j] = logical[perms_[3][j]];
  return stored;
}

AttentionView AttentionLayout::output_view(const std::array<int64_t, 4>& logical) const {
  // The stored Y is Transpose(Y, perm): stored dim j is logical dim perm[j].
  const std::vector<int64_t> stored_strides = contiguous_strides(output_shape(logical));
  AttentionView view;
  view.dims = logical;
  for (size_t j = 0; j < 4; ++j) view.strides[perms_[3][j]] = stored_strides[j];
  return view;
}

}  // namespace onnxkit
