#!/usr/bin/env python3
"""Writes the hostile models of tests/data/hostile/: small files crafted to make a loader or an
executor allocate terabytes, overflow int64 shape arithmetic, recurse without end, loop
forever or read outside the model's folder. cases.txt says what each must do.

Run with an interpreter that has onnx (the project's .venv):
    .venv/bin/python tests/data/hostile/make_hostile_models.py tests/data/hostile
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


def model(nodes, inputs, outputs, initializers=(), name="hostile", opset=OPSET, functions=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=opset, producer_name="onnxkit-hostile",
                          functions=list(functions))
    m.ir_version = 8
    return m


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def f32(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def raw_tensor(name, elem, dims, raw):
    # Built by hand: onnx.helper checks that the data fits the dims, which these do not.
    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, elem, raw
    t.dims.extend(dims)
    return t


def out(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def inp(name, elem=TensorProto.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def field(number, payload):
    # A length-delimited protobuf field, by hand.
    def varint(value):
        out = bytearray()
        while True:
            byte, value = value & 0x7F, value >> 7
            out.append(byte | (0x80 if value else 0))
            if not value:
                return bytes(out)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


class RawModel:
    """Serialized bytes standing in for a model protobuf cannot build (too deep for its
    parser's recursion limit)."""

    def __init__(self, data):
        self.data = data

    def SerializeToString(self):
        return self.data


def deep_nesting_model(depth):
    # If inside If inside If ...: one branch nests, the other is a leaf, so the file grows
    # linearly. Composed as bytes, since protobuf's Python parser stops at 100 levels.
    def leaf(level):
        return helper.make_graph(
            [helper.make_node("Identity", ["x"], [f"y{level}"], name=f"leaf{level}")],
            f"leaf{level}", [], [out(f"y{level}", shape=[1])]).SerializeToString()

    def branch(name, graph_bytes):
        attribute = onnx.AttributeProto(name=name, type=onnx.AttributeProto.GRAPH)
        return field(5, attribute.SerializeToString() + field(6, graph_bytes))

    inner = leaf(0)
    for level in range(1, depth):
        node = helper.make_node("If", ["c"], [f"y{level}"], name=f"if{level}")
        node_bytes = (node.SerializeToString() + branch("then_branch", inner) +
                      branch("else_branch", leaf(level)))
        shell = helper.make_graph([], f"g{level}", [], [out(f"y{level}", shape=[1])])
        inner = shell.SerializeToString() + field(1, node_bytes)
    main = helper.make_graph([], "deep", [inp("x", shape=[1])],
                             [out(f"y{depth - 1}", shape=[1])],
                             [numpy_helper.from_array(np.array(True), "c")])
    # The main graph's node list is the innermost shell's: reparent by rewrapping once more.
    node = helper.make_node("If", ["c"], [f"y{depth - 1}"], name="top")
    top = (node.SerializeToString() + branch("then_branch", inner) +
           branch("else_branch", leaf(depth - 1)))
    shell = helper.make_model(main, opset_imports=OPSET, producer_name="onnxkit-hostile")
    shell.ir_version = 8
    graph_bytes = main.SerializeToString() + field(1, top)
    shell.ClearField("graph")
    return RawModel(shell.SerializeToString() + field(7, graph_bytes))


def save(folder, name, m):
    # Written as bytes: onnx.save would refuse some of these, and the checker must not run.
    with open(os.path.join(folder, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def build(folder):
    models = {}
    # Tensor bytes far past any machine: the allocation must be refused before it happens.
    models["constant_of_shape_huge"] = model(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos")],
        [], [out("y")], [i64("shape", [2**20, 2**20, 2**20])])
    models["expand_huge"] = model(
        [helper.make_node("Expand", ["x", "shape"], ["y"], name="expand")],
        [inp("x", shape=[1])], [out("y")], [i64("shape", [2**31, 2**31])])
    models["tile_overflow"] = model(
        [helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile")],
        [inp("x", shape=[4])], [out("y")], [i64("repeats", [2**62])])
    models["range_huge"] = model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")],
        [], [out("y", TensorProto.INT64)],
        [i64("start", 0), i64("limit", 2**62), i64("delta", 1)])
    models["range_overflow"] = model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")],
        [], [out("y", TensorProto.INT64)],
        [i64("start", I64_MIN), i64("limit", I64_MAX), i64("delta", 3)])
    models["reshape_overflow"] = model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [inp("x", shape=[6])], [out("y")], [i64("shape", [2**62, 4, -1])])
    models["reshape_negative"] = model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")],
        [inp("x", shape=[6])], [out("y")], [i64("shape", [-5, 2])])
    models["pad_overflow"] = model(
        [helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")],
        [inp("x", shape=[4])], [out("y")], [i64("pads", [I64_MAX - 2, I64_MAX - 2])])
    models["resize_huge"] = model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="resize", mode="nearest")],
        [inp("x", shape=[1, 1, 2, 2])], [out("y")], [f32("scales", [1, 1, 1e12, 1e12])])
    models["concat_huge_dim"] = model(
        [helper.make_node("ConstantOfShape", ["shape"], ["c"], name="cos"),
         helper.make_node("Concat", ["c", "c"], ["y"], name="concat", axis=0)],
        [], [out("y")], [i64("shape", [I64_MAX // 2 + 1])])
    # Declared shapes the data does not back.
    models["negative_input_dim"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [inp("x", shape=[-3, 4])], [out("y")])
    models["huge_input_dim"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [inp("x", shape=[2**40, 2**40])], [out("y")])
    models["initializer_without_data"] = model(
        [helper.make_node("Relu", ["w"], ["y"], name="relu")], [], [out("y")],
        [raw_tensor("w", TensorProto.FLOAT, [2**62], b"\0\0\0\0")])
    models["initializer_dims_overflow"] = model(
        [helper.make_node("Relu", ["w"], ["y"], name="relu")], [], [out("y")],
        [raw_tensor("w", TensorProto.FLOAT, [2**40, 2**40, 2**40], b"")])
    # Gather: 2^31 elements of indices declared, 8 bytes given; and an index of 2^31.
    models["gather_indices_2p31_elements"] = model(
        [helper.make_node("Gather", ["data", "idx"], ["y"], name="gather")],
        [], [out("y")],
        [f32("data", [1, 2, 3]),
         raw_tensor("idx", TensorProto.INT64, [2**31], b"\0" * 8)])
    models["gather_index_2p31"] = model(
        [helper.make_node("Gather", ["data", "idx"], ["y"], name="gather")],
        [], [out("y")], [f32("data", [1, 2, 3]), i64("idx", [2**31])])
    # Control flow: a Loop that never stops, and subgraphs nested far too deep.
    body_counter = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["n_in", "one"], ["n_out"], name="count")], "body",
        [inp("iter", TensorProto.INT64, []), inp("cond_in", TensorProto.BOOL, []),
         inp("n_in", TensorProto.INT64, [])],
        [out("cond_out", TensorProto.BOOL, []), out("n_out", TensorProto.INT64, [])],
        initializer=[i64("one", 1)])
    # A trip count of 2^63 - 1 (what exporters write for "no bound") with a condition that
    # never turns false, and a while loop (no trip count) that never makes progress.
    models["loop_huge_trip_count"] = model(
        [helper.make_node("Loop", ["m", "cond", "n0"], ["n"], name="loop", body=body_counter)],
        [], [out("n", TensorProto.INT64, [])],
        [i64("m", I64_MAX), numpy_helper.from_array(np.array(True), "cond"), i64("n0", 0)])
    models["while_without_progress"] = model(
        [helper.make_node("Loop", ["", "cond", "n0"], ["n"], name="while", body=body_counter)],
        [], [out("n", TensorProto.INT64, [])],
        [numpy_helper.from_array(np.array(True), "cond"), i64("n0", 0)])
    models["deep_nesting"] = deep_nesting_model(200)
    # A cycle that only shows through a subgraph's capture: 'a' reads 'b' inside its branch,
    # and 'b' reads 'a'.
    branch = helper.make_graph([helper.make_node("Identity", ["b_out"], ["r"], name="capture")],
                               "branch", [], [out("r", shape=[1])])
    models["cycle_through_capture"] = model(
        [helper.make_node("If", ["c"], ["a_out"], name="a", then_branch=branch,
                          else_branch=branch),
         helper.make_node("Relu", ["a_out"], ["b_out"], name="b")],
        [], [out("b_out", shape=[1])], [numpy_helper.from_array(np.array(True), "c")])
    models["self_loop"] = model(
        [helper.make_node("Add", ["x", "y"], ["y"], name="self")],
        [inp("x", shape=[1])], [out("y", shape=[1])])
    # A model-local function that calls itself: inlining must not recurse forever.
    recurse = helper.make_function(
        "local", "Recurse", ["x"], ["y"],
        [helper.make_node("Recurse", ["x"], ["y"], domain="local", name="again")],
        OPSET)
    models["recursive_function"] = model(
        [helper.make_node("Recurse", ["x"], ["y"], domain="local", name="call")],
        [inp("x", shape=[1])], [out("y", shape=[1])],
        opset=OPSET + [helper.make_opsetid("local", 1)], functions=[recurse])

    # External data: outside the folder, at a device, longer than its file.
    def external(location, length, offset=0):
        t = raw_tensor("w", TensorProto.FLOAT, [length // 4], b"")
        t.ClearField("raw_data")
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", str(offset)),
                           ("length", str(length))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        return model([helper.make_node("Relu", ["w"], ["y"], name="relu")], [], [out("y")], [t])

    models["external_outside_folder"] = external("../../../../etc/passwd", 16)
    models["external_absolute"] = external("/etc/passwd", 16)
    models["external_dev_zero"] = external("dev_zero.bin", 2**40)
    models["external_symlink_outside"] = external("passwd_link.bin", 16)
    models["external_longer_than_file"] = external("small.bin", 2**30)
    models["external_offset_overflow"] = external("small.bin", 16, offset=2**64 - 8)

    # Sizes taken from attributes and constant inputs other than a shape: each output must be
    # bounded before it is allocated.
    models["onehot_huge_depth"] = model(
        [helper.make_node("OneHot", ["i", "depth", "values"], ["y"], name="onehot")],
        [inp("i", TensorProto.INT64, [4])], [out("y")],
        [i64("depth", [2**40]), f32("values", [0, 1])])
    models["random_normal_huge"] = model(
        [helper.make_node("RandomNormal", [], ["y"], shape=[2**20, 2**20, 2**20], name="rn")],
        [], [out("y")])
    models["multinomial_huge"] = model(
        [helper.make_node("Multinomial", ["x"], ["y"], sample_size=2**40, name="multinomial")],
        [inp("x", shape=[1, 4])], [out("y", TensorProto.INT32)])
    models["roialign_huge"] = model(
        [helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], output_height=2**20,
                          output_width=2**20, sampling_ratio=2**20, name="roialign")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")],
        [f32("rois", [[0, 0, 3, 3]]), i64("batch", [0])])
    models["dft_huge_length"] = model(
        [helper.make_node("DFT", ["x", "length"], ["y"], name="dft")],
        [inp("x", shape=[1, 8, 1])], [out("y")], [i64("length", 2**40)])
    models["convtranspose_huge_output"] = model(
        [helper.make_node("ConvTranspose", ["x", "w"], ["y"], output_shape=[2**31, 2**31],
                          name="convtranspose")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")], [f32("w", np.ones((1, 1, 3, 3)))])
    models["maxunpool_huge_output"] = model(
        [helper.make_node("MaxUnpool", ["x", "i", "shape"], ["y"], kernel_shape=[2, 2],
                          strides=[2, 2], name="unpool")],
        [inp("x", shape=[1, 1, 2, 2]), inp("i", TensorProto.INT64, [1, 1, 2, 2])], [out("y")],
        [i64("shape", [1, 1, 2**31, 2**31])])
    models["upsample_huge_scales"] = model(
        [helper.make_node("Upsample", ["x", "scales"], ["y"], name="upsample")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")], [f32("scales", [1, 1, 1e9, 1e9])],
        opset=[helper.make_opsetid("", 9)])
    # Divisions by an attribute or a value: a clear error, never SIGFPE.
    models["div_int_by_zero"] = model(
        [helper.make_node("Div", ["x", "zero"], ["y"], name="div")],
        [inp("x", TensorProto.INT32, [4])], [out("y", TensorProto.INT32)],
        [numpy_helper.from_array(np.zeros(4, np.int32), "zero")])
    models["mod_int_by_zero"] = model(
        [helper.make_node("Mod", ["x", "zero"], ["y"], name="mod")],
        [inp("x", TensorProto.INT64, [4])], [out("y", TensorProto.INT64)], [i64("zero", [0] * 4)])
    models["space_to_depth_blocksize_0"] = model(
        [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=0, name="s2d")],
        [inp("x", shape=[1, 3, 4, 4])], [out("y")])
    models["conv_group_0"] = model(
        [helper.make_node("Conv", ["x", "w"], ["y"], group=0, name="conv")],
        [inp("x", shape=[1, 4, 8, 8])], [out("y")], [f32("w", np.ones((4, 4, 3, 3)))])
    models["average_pool_kernel_0"] = model(
        [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[0, 0], name="pool")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")])
    models["slice_step_0"] = model(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")],
        [inp("x", shape=[8])], [out("y")],
        [i64("starts", [0]), i64("ends", [8]), i64("axes", [0]), i64("steps", [0])])
    # Indices far out of range.
    models["scatter_nd_index_2p40"] = model(
        [helper.make_node("ScatterND", ["x", "indices", "updates"], ["y"], name="scatter")],
        [inp("x", shape=[4])], [out("y")], [i64("indices", [[2**40]]), f32("updates", [1])])
    models["topk_k_2p40"] = model(
        [helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk")],
        [inp("x", shape=[1, 8])], [out("values"), out("indices", TensorProto.INT64)],
        [i64("k", [2**40])])
    # Type rules run on every node before anything else: their own arithmetic on a model's
    # numbers must fail cleanly too (a negative dim, a division by zero, a list shorter than
    # the rank, a rank of 2^40, a float past int64).
    models["tile_negative_repeat"] = model(
        [helper.make_node("Tile", ["x", "repeats"], ["y"], name="tile")],
        [inp("x", shape=[4])], [out("y")], [i64("repeats", [-2])])
    models["slice_steps_shorter_than_axes"] = model(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="slice")],
        [inp("x", shape=[4, 4])], [out("y")],
        [i64("starts", [0, 0]), i64("ends", [2, 2]), i64("axes", [0, 1]), i64("steps", [1])])
    models["split_to_sequence_split_0"] = model(
        [helper.make_node("SplitToSequence", ["x", "split"], ["y"], name="split")],
        [inp("x", shape=[4])],
        [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)],
        [i64("split", 0)])
    models["gather_nd_negative_batch_dims"] = model(
        [helper.make_node("GatherND", ["x", "i"], ["y"], batch_dims=-1, name="gathernd")],
        [inp("x", shape=[2, 2]), inp("i", TensorProto.INT64, [2, 1])], [out("y")])
    models["constant_of_shape_rank_2p40"] = model(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"], name="cos")],
        [inp("shape", TensorProto.INT64, [2**40])], [out("y")])
    models["affine_grid_theta_2p40"] = model(
        [helper.make_node("AffineGrid", ["theta", "size"], ["y"], name="grid")],
        [inp("theta", shape=[1, 2**40, 3]), inp("size", TensorProto.INT64, [4])], [out("y")],
        opset=[helper.make_opsetid("", 20)])
    models["range_nan"] = model(
        [helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")],
        [], [out("y")], [f32("start", np.float32("nan")), f32("limit", 4), f32("delta", 1)])
    models["conv_group_overflow"] = model(
        [helper.make_node("Conv", ["x", "w"], ["y"], group=2**62, name="conv")],
        [inp("x", shape=[1, 4, 8, 8])], [out("y")], [f32("w", np.ones((4, 2, 3, 3)))])
    models["roialign_roi_1e30"] = model(
        [helper.make_node("RoiAlign", ["x", "rois", "batch"], ["y"], name="roialign")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")],
        [f32("rois", [[0, 0, 1e30, 1e30]]), i64("batch", [0])])
    models["max_roi_pool_roi_1e38"] = model(
        [helper.make_node("MaxRoiPool", ["x", "rois"], ["y"], pooled_shape=[2, 2],
                          spatial_scale=1e30, name="roipool")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")], [f32("rois", [[0, 0, 0, 1e30, 1e30]])])
    # A skip distance of 2^62 past a row of 4: the count must end (rc 0), not loop 2^62 times.
    models["tfidf_max_skip_2p62"] = model(
        [helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode="TF", min_gram_length=2,
                          max_gram_length=2**40, max_skip_count=2**62, ngram_counts=[0, 0],
                          ngram_indexes=[0], pool_int64s=[1, 2], name="tfidf")],
        [inp("x", TensorProto.INT64, [1, 4])], [out("y")])
    models["resize_antialias_scale_1e-45"] = model(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1,
                          name="resize")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")], [f32("scales", [1, 1, 1e-45, 1])],
        opset=[helper.make_opsetid("", 18)])

    # Structure the loader and the passes must refuse or survive: types declared only in
    # value_info or on outputs, sparse initializers, typed data that does not fit its dims,
    # names defined twice, and an input whose default value has another shape.
    relu_chain = [helper.make_node("Relu", ["x"], ["mid"], name="relu"),
                  helper.make_node("Neg", ["mid"], ["y"], name="neg")]
    models["value_info_huge_dims"] = model(relu_chain, [inp("x", shape=[2, 2])],
                                           [out("y", shape=[2, 2])])
    models["value_info_huge_dims"].graph.value_info.append(out("mid", shape=[2**40, 2**40]))
    models["output_declared_huge_dims"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [inp("x", shape=[2, 2])],
        [out("y", shape=[2**40, 2**40])])

    def sparse_initializer(dims, indices, values, index_dims=None):
        sparse = onnx.SparseTensorProto()
        sparse.values.CopyFrom(numpy_helper.from_array(np.array(values, np.float32), "w"))
        sparse.indices.CopyFrom(numpy_helper.from_array(np.array(indices, np.int64), "i"))
        if index_dims is not None:
            sparse.indices.ClearField("dims")
            sparse.indices.dims.extend(index_dims)
        sparse.dims.extend(dims)
        m = model([helper.make_node("Relu", ["w"], ["y"], name="relu")], [], [out("y")])
        m.graph.sparse_initializer.append(sparse)
        return m

    models["sparse_index_2p40"] = sparse_initializer([4], [2**40], [1])
    models["sparse_index_negative"] = sparse_initializer([4], [-1], [1])
    models["sparse_indices_unsorted"] = sparse_initializer([4], [3, 1], [1, 2])
    models["sparse_coordinate_out_of_range"] = sparse_initializer([2, 2], [0, 5], [1], [1, 2])
    models["sparse_values_count_mismatch"] = sparse_initializer([4], [0, 1, 2], [1])
    string_tensor = TensorProto(name="s", data_type=TensorProto.STRING, dims=[2**31],
                                string_data=[b"a"])
    models["string_2p31_elements"] = model(
        [helper.make_node("Identity", ["s"], ["y"], name="id")], [], [out("y", TensorProto.STRING)],
        [string_tensor])
    for elem in (TensorProto.INT4, TensorProto.UINT4, TensorProto.FLOAT8E4M3FN,
                 TensorProto.BFLOAT16, TensorProto.COMPLEX64):
        name = TensorProto.DataType.Name(elem).lower()
        models[f"raw_data_short_{name}"] = model(
            [helper.make_node("Identity", ["w"], ["y"], name="id")], [], [out("y", elem)],
            [raw_tensor("w", elem, [3], b"\1")])
    models["two_producers"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="a"),
         helper.make_node("Neg", ["x"], ["y"], name="b")],
        [inp("x", shape=[2])], [out("y", shape=[2])])
    models["output_without_producer"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="a")], [inp("x", shape=[2])],
        [out("y", shape=[2]), out("ghost", shape=[2])])
    models["input_default_of_another_shape"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="a")], [inp("x", shape=[2, 3])], [out("y")],
        [f32("x", [1, 2, 3, 4, 5])])
    models["opset_imported_twice"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [inp("x", shape=[2])], [out("y")],
        opset=OPSET + [helper.make_opsetid("", 9)])
    models["opset_not_imported"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [inp("x", shape=[2])], [out("y")],
        opset=[])
    models["ir_version_0"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                   [inp("x", shape=[2])], [out("y")])
    models["ir_version_0"].ir_version = 0
    # Subgraphs whose arity or types do not fit their node: libonnx's inference trusts the
    # checker on these (Scan's num_scan_inputs past its inputs crashed it, and a server with it).
    two_outputs = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["r1"], name="i1"),
         helper.make_node("Identity", ["x"], ["r2"], name="i2")], "two", [],
        [out("r1", shape=[2]), out("r2", shape=[2])])
    one_output = helper.make_graph([helper.make_node("Identity", ["x"], ["r"], name="i3")],
                                   "one", [], [out("r", shape=[2])])
    models["if_branch_arity"] = model(
        [helper.make_node("If", ["c"], ["y"], then_branch=two_outputs, else_branch=one_output,
                          name="if")],
        [inp("x", shape=[2]), inp("c", TensorProto.BOOL, [])], [out("y")])
    int_branch = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["r"], to=TensorProto.INT64, name="cast")], "int", [],
        [out("r", TensorProto.INT64, [2])])
    models["if_branch_types_differ"] = model(
        [helper.make_node("If", ["c"], ["y"], then_branch=int_branch, else_branch=one_output,
                          name="if")],
        [inp("x", shape=[2]), inp("c", TensorProto.BOOL, [])], [out("y")])
    retyping_body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Cast", ["n_in"], ["n_out"], to=TensorProto.FLOAT, name="retype")],
        "body", [inp("iter", TensorProto.INT64, []), inp("cond_in", TensorProto.BOOL, []),
                 inp("n_in", TensorProto.INT64, [])],
        [out("cond_out", TensorProto.BOOL, []), out("n_out", TensorProto.FLOAT, [])])
    models["loop_carried_type_changes"] = model(
        [helper.make_node("Loop", ["m", "cond", "n0"], ["n"], name="loop", body=retyping_body)],
        [], [out("n", TensorProto.INT64, [])],
        [i64("m", 3), numpy_helper.from_array(np.array(True), "cond"), i64("n0", 0)])
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"], name="acc")], "scan_body",
        [inp("s_in", shape=[2]), inp("x_t", shape=[2])], [out("s_out", shape=[2])])
    models["scan_num_scan_inputs_past_inputs"] = model(
        [helper.make_node("Scan", ["s0", "xs"], ["s"], num_scan_inputs=5, body=scan_body,
                          name="scan")],
        [inp("s0", shape=[2]), inp("xs", shape=[3, 2])], [out("s")])
    models["scan_outputs_past_body"] = model(
        [helper.make_node("Scan", ["s0", "xs"], ["s", "extra", "more"], num_scan_inputs=1,
                          body=scan_body, name="scan")],
        [inp("s0", shape=[2]), inp("xs", shape=[3, 2])], [out("s")])
    # Mutually recursive functions, and a node with 100,000 inputs (the verifier's use lookups
    # were quadratic in them).
    calls_b = helper.make_function("local", "A", ["x"], ["y"],
                                   [helper.make_node("B", ["x"], ["y"], domain="local")], OPSET)
    calls_a = helper.make_function("local", "B", ["x"], ["y"],
                                   [helper.make_node("A", ["x"], ["y"], domain="local")], OPSET)
    models["functions_mutually_recursive"] = model(
        [helper.make_node("A", ["x"], ["y"], domain="local", name="call")],
        [inp("x", shape=[1])], [out("y", shape=[1])],
        opset=OPSET + [helper.make_opsetid("local", 1)], functions=[calls_b, calls_a])
    models["sum_100000_inputs"] = model(
        [helper.make_node("Sum", ["x"] * 100000, ["y"], name="sum")], [inp("x", shape=[2])],
        [out("y")])
    # 30,000 graph outputs: the check's search of the expected outputs was quadratic in them.
    models["graph_outputs_30000"] = model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], [inp("x", shape=[2])],
        [out("y")] * 30000)
    # Constants and attributes out of range for the op that reads them.
    opset20 = [helper.make_opsetid("", 20)]
    models["center_crop_pad_2p31"] = model(
        [helper.make_node("CenterCropPad", ["x", "shape"], ["y"], name="ccp")],
        [inp("x", shape=[4, 4])], [out("y")], [i64("shape", [2**31, 2**31])], opset=opset20)
    models["gather_negative_index_out_of_range"] = model(
        [helper.make_node("Gather", ["data", "idx"], ["y"], name="gather")], [], [out("y")],
        [f32("data", [1, 2, 3]), i64("idx", [-4])])
    models["scatter_elements_index_int64_min"] = model(
        [helper.make_node("ScatterElements", ["x", "idx", "u"], ["y"], name="scatter")],
        [inp("x", shape=[3])], [out("y")], [i64("idx", [I64_MIN]), f32("u", [9])])
    models["reduce_sum_axis_5"] = model(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="reduce")],
        [inp("x", shape=[2, 3])], [out("y")], [i64("axes", [5])],
        opset=[helper.make_opsetid("", 18)])
    models["einsum_label_sizes_differ"] = model(
        [helper.make_node("Einsum", ["a", "b"], ["y"], equation="ij,ij->i", name="einsum")],
        [inp("a", shape=[2, 3]), inp("b", shape=[2, 5])], [out("y")])
    models["resize_sizes_negative"] = model(
        [helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize")],
        [inp("x", shape=[1, 1, 4, 4])], [out("y")], [i64("sizes", [1, 1, -2, 4])])
    models["cast_to_99"] = model([helper.make_node("Cast", ["x"], ["y"], to=99, name="cast")],
                                 [inp("x", shape=[2])], [out("y")])
    models["dequantize_block_size_negative"] = model(
        [helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=0, block_size=-2,
                          name="dq")],
        [inp("x", TensorProto.INT8, [4, 4])], [out("y")], [f32("s", np.ones((2, 4)))],
        opset=[helper.make_opsetid("", 21)])
    models["col2im_strides_0"] = model(
        [helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[0, 0],
                          name="col2im")],
        [inp("x", shape=[1, 4, 9])], [out("y")], [i64("image", [4, 4]), i64("block", [2, 2])],
        opset=opset20)
    models["topk_k_negative"] = model(
        [helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="topk")],
        [inp("x", shape=[1, 8])], [out("values"), out("indices", TensorProto.INT64)],
        [i64("k", [-3])])

    # Attributes the op does not take, which the run would ignore: a subgraph on a Relu
    # (walked by passes as if it ran), an int where the op takes ints.
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
    relu.attribute.append(helper.make_attribute("body", helper.make_graph(
        [helper.make_node("Neg", ["x"], ["z"])], "body", [], [out("z")])))
    models["relu_graph_attribute"] = model([relu], [inp("x", shape=[4])], [out("y")])
    models["transpose_perm_int"] = model(
        [helper.make_node("Transpose", ["x"], ["y"], perm=1, name="transpose")],
        [inp("x", shape=[2, 3])], [out("y")])
    # An opset far past any ONNX release: kernels of today's versions must not run it.
    models["opset_2p62"] = model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                                 [inp("x", shape=[4])], [out("y")],
                                 opset=[helper.make_opsetid("", 2**62)])

    # An axis of a scalar: normalize_axis once took axis 0 of a rank-0 tensor as valid, and
    # these ops then indexed per-axis vectors of size 0 (UBSan: null loads).
    scalar = [inp("x", shape=[])]
    seq_out = [helper.make_tensor_sequence_value_info("y", TensorProto.FLOAT, None)]
    models["scalar_axis_mvn"] = model(
        [helper.make_node("MeanVarianceNormalization", ["x"], ["y"], axes=[0], name="mvn")],
        scalar, [out("y")])
    models["scalar_axis_pad"] = model(
        [helper.make_node("Pad", ["x", "p", "", "a"], ["y"], name="pad")], scalar, [out("y")],
        [i64("p", [1, 1]), i64("a", [0])], opset=[helper.make_opsetid("", 18)])
    models["scalar_axis_resize"] = model(
        [helper.make_node("Resize", ["x", "", "s"], ["y"], axes=[0], name="resize")], scalar,
        [out("y")], [f32("s", [2])], opset=[helper.make_opsetid("", 18)])
    models["scalar_axis_center_crop_pad"] = model(
        [helper.make_node("CenterCropPad", ["x", "s"], ["y"], axes=[0], name="ccp")], scalar,
        [out("y")], [i64("s", [2])], opset=[helper.make_opsetid("", 18)])
    models["scalar_axis_split_to_sequence"] = model(
        [helper.make_node("SplitToSequence", ["x"], ["y"], axis=0, name="split")], scalar,
        seq_out)
    models["scalar_axis_concat_from_sequence"] = model(
        [helper.make_node("SequenceConstruct", ["x"], ["s"]),
         helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, name="concat")],
        scalar, [out("y")])
    models["scalar_axis_scan"] = model(
        [helper.make_node("Scan", ["x"], ["y"], num_scan_inputs=1, scan_input_axes=[0],
                          name="scan",
                          body=helper.make_graph([helper.make_node("Identity", ["a"], ["b"])],
                                                 "body", [inp("a", shape=[])],
                                                 [out("b", shape=[])]))],
        scalar, [out("y")], opset=[helper.make_opsetid("", 16)])

    # Signal ops size scratch tables (in doubles) by their inputs before the output exists.
    opset17 = [helper.make_opsetid("", 17)]
    models["hann_window_size_2p40"] = model(
        [helper.make_node("HannWindow", ["n"], ["y"], name="hann")], [], [out("y")],
        [i64("n", 2**40)], opset=opset17)
    mel_inputs = ["bins", "dft", "rate", "low", "high"]
    models["mel_weight_matrix_bins_i64max"] = model(
        [helper.make_node("MelWeightMatrix", mel_inputs, ["y"], name="mel")], [], [out("y")],
        [i64("bins", I64_MAX), i64("dft", 16), i64("rate", 16000), f32("low", 0),
         f32("high", 8000)], opset=opset17)
    models["mel_weight_matrix_upper_1e30"] = model(
        [helper.make_node("MelWeightMatrix", mel_inputs, ["y"], name="mel")], [], [out("y")],
        [i64("bins", 8), i64("dft", 16), i64("rate", 16000), f32("low", 0), f32("high", 1e30)],
        opset=opset17)

    # A pooling window far wider than its input: oneDNN visits every tap of it.
    models["maxpool_kernel_2p31"] = model(
        [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[19, 2**31 - 1],
                          auto_pad="SAME_LOWER", name="pool")],
        [inp("x", shape=[1, 3, 32, 32])], [out("y")], opset=[helper.make_opsetid("", 21)])

    # Model-local functions that call themselves, or nest calls thousands deep: inlining never
    # ends, and libonnx's inference of a call recurses once per level (SEGV in simplify).
    local = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]

    def function(name, callee):
        body = ([helper.make_node(callee, ["a"], ["b"], domain="local")] if callee
                else [helper.make_node("Relu", ["a"], ["b"])])
        return helper.make_function("local", name, ["a"], ["b"], body, local)

    call = [helper.make_node("F0", ["x"], ["y"], domain="local", name="call")]
    # recursive_function's and functions_mutually_recursive's functions import no "local"
    # opset; this one does, which takes libonnx's inference into its calls.
    models["function_recursive_importing_its_domain"] = model(
        call, [inp("x", shape=[2])], [out("y")], opset=local, functions=[function("F0", "F0")])
    models["function_chain_5000"] = model(
        call, [inp("x", shape=[2])], [out("y")], opset=local,
        functions=[function(f"F{i}", f"F{i + 1}" if i + 1 < 5000 else None) for i in range(5000)])

    # A static shape with a dim of 2^32 ahead of oneDNN's kernels, which build their plans at
    # session creation from the shapes inference found and block dims in 32-bit ints (SIGFPE).
    for op, weight, shape in (("MatMul", f32("w", np.ones((8, 2))), [2**32, 8]),
                              ("Conv", f32("w", np.ones((2, 8, 1, 1))), [1, 8, 1, 2**32])):
        models[f"{op.lower()}_after_reshape_to_2p32"] = model(
            [helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
             helper.make_node(op, ["r", "w"], ["y"], name=op.lower())],
            [inp("x", shape=[1, 8])], [out("y")], [i64("shape", shape), weight])

    # Files that are not a model: empty, a valid protobuf of another message, a model cut in
    # half (its initializer's bytes run past the end).
    models["empty_file"] = RawModel(b"")
    models["tensor_proto_file"] = RawModel(f32("t", np.ones((2, 3))).SerializeToString())
    whole = model([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                  [inp("x", shape=[64])], [out("y")],
                  [f32("w", np.arange(64))]).SerializeToString()
    models["truncated_half"] = RawModel(whole[:len(whole) // 2])

    for name, m in models.items():
        save(folder, name, m)
    with open(os.path.join(folder, "small.bin"), "wb") as f:
        f.write(b"\0" * 64)
    # A model whose weights live where `quantize/simplify --save-as-external-data M out.onnx`
    # writes its own: out.onnx.data. Saving must not replace the input's weights.
    weights = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    with open(os.path.join(folder, "out.onnx.data"), "wb") as f:
        f.write(weights.tobytes())
    w = raw_tensor("w", TensorProto.FLOAT, [64, 64], b"")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "out.onnx.data"), ("offset", "0"),
                       ("length", str(weights.nbytes))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    save(folder, "weights_in_out_onnx_data",
         model([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
               [inp("x", shape=[1, 64])], [out("y", shape=[1, 64])], [w]))
    for link, target in (("dev_zero.bin", "/dev/zero"), ("passwd_link.bin", "/etc/passwd")):
        path = os.path.join(folder, link)
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)
    return sorted(models)


if __name__ == "__main__":
    names = build(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(__file__))
    print(f"{len(names)} hostile models")
