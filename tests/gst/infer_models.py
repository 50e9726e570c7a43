# SPDX-License-Identifier: Apache-2.0
"""Models and references for tests/gst/test_infer.cpp, made at test time.

  infer_models.py make DIR
      writes the test models into DIR (python3-onnx):
        weighted.onnx   float32 [batch,3,h,w] "images" -> a 1x1 Conv to 2
                        channels with bias, "features" [batch,2,h,w], and
                        their per-channel means, "scores" [batch,2]: outputs
                        that depend on every input value and on the channel
        bytes.onnx      uint8 [1,8,8,3] "pixels" -> per-channel sums as
                        float32, "sums" [1,3]
        wide.onnx       weighted.onnx's graph with the input fixed to
                        [1,3,32,32] (a shape mismatch for 16x16 tensors)
        classifier.onnx a small 10-way classifier on float32 [1,3,224,224]
                        (the benchmark's "small model")
        classifier_batch.onnx
                        the same classifier, weights and all, on float32
                        [batch,3,224,224] (tests/bench/batch_vs_chains.sh)
        classifier640.onnx, classifier640_batch.onnx
                        the same two on [1|batch,3,640,640] (its 640x640 rows)
        passthrough.onnx
                        float32 [batch,3,h,w] "images" whose one output is
                        "images" itself: no node writes it
        echo.onnx       weighted.onnx with its input listed among its
                        outputs too ("images", "features", "scores"), as
                        debugging exports do
        nonzero.onnx    float32 [batch,3,h,w] "images" -> the channel mean
                        of each pixel, "indices" (int64) of those above 0.5
                        (NonZero) and their "values" (Gather): outputs whose
                        length the data decides, empty for zeros
        nonzero_low.onnx
                        the same above -0.5: zeros give every pixel
        huge.onnx       float32 [batch,3,h,w] "images" -> "huge", declared
                        float32 [1073741824] (4 GiB: the mean expanded)
        garbage.onnx    bytes that are no ONNX model
        ball.onnx       a detector in YOLOv8's output layout, plain ONNX
                        operators, no weights: float32 [1,3,640,640]
                        "images" (RGB in [0,1]) -> "output0" [1,5,1], one
                        candidate (cx, cy, w, h in tensor pixels, a score):
                        the extent of the pixels whose channel mean exceeds
                        0.5 (videotestsrc pattern=ball's white ball on black),
                        score 1 when there are any, 0 when none; with
                        ball.onnx.modelinfo (GStreamer 1.28's format), whose
                        ids upstream's yolov8tensordec reads
  infer_models.py annotate SOURCE DESTINATION
      copies a model, naming each output's tensor id in its metadata (what
      GStreamer's onnxinference 1.26 needs; tests/bench/infer_vs_onnxinference.sh)

The references the tests compare with come from infer_reference.cpp (ONNX
Runtime's own C++ API, on the library the element opens), not from here.

Exits 77 (skip) naming the Debian package when onnx or numpy is missing.
"""

import os
import sys

SKIP = 77


def need(module, package):
    try:
        return __import__(module)
    except ImportError as e:
        print("%s is not installed for %s (Debian: %s): %s" % (module, sys.executable, package, e))
        sys.exit(SKIP)


def weighted_graph(onnx, np, input_dims, name):
    from onnx import TensorProto, helper, numpy_helper

    # Distinct weights per channel, so that a swapped channel order or layout changes the result.
    weights = np.array([[0.5, -1.25, 2.0], [1.5, 0.75, -0.5]], dtype=np.float32).reshape(2, 3, 1, 1)
    bias = np.array([0.125, -0.25], dtype=np.float32)
    nodes = [
        helper.make_node("Conv", ["images", "w", "b"], ["features"]),
        helper.make_node("ReduceMean", ["features"], ["scores"], axes=[2, 3], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, input_dims)],
        [
            helper.make_tensor_value_info("features", TensorProto.FLOAT, [input_dims[0], 2, None, None]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [input_dims[0], 2]),
        ],
        [numpy_helper.from_array(weights, "w"), numpy_helper.from_array(bias, "b")],
    )
    # opset 13: ReduceMean still takes its axes as an attribute.
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def bytes_graph(onnx):
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Cast", ["pixels"], ["wide"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["wide", "axes"], ["sums"], keepdims=0),
    ]
    axes = helper.make_tensor("axes", TensorProto.INT64, [2], [1, 2])
    graph = helper.make_graph(
        nodes,
        "bytes",
        [helper.make_tensor_value_info("pixels", TensorProto.UINT8, [1, 8, 8, 3])],
        [helper.make_tensor_value_info("sums", TensorProto.FLOAT, [1, 3])],
        [axes],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def classifier_graph(onnx, np, batch=1, size=224):
    """A small classifier on SIZExSIZE RGB, NCHW float32: 1x1 Conv to 8
    channels, Relu, global average pool, a 10-way Gemm and Softmax. Cheap
    enough that pre-processing dominates (tests/bench/infer_vs_onnxinference.sh)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(25)
    conv = rng.standard_normal((8, 3, 1, 1)).astype(np.float32)
    gemm = rng.standard_normal((8, 10)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["images", "conv"], ["features"]),
        helper.make_node("Relu", ["features"], ["active"]),
        helper.make_node("GlobalAveragePool", ["active"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["flat"]),
        helper.make_node("Gemm", ["flat", "gemm"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["scores"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "classifier",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [batch, 3, size, size])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [batch, 10])],
        [numpy_helper.from_array(conv, "conv"), numpy_helper.from_array(gemm, "gemm")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    # GStreamer's onnxinference (1.26) takes each output's tensor id from the
    # model's metadata, keyed by the output's name.
    helper.set_model_props(model, {"scores": "classification-scores"})
    return model


def yolo_graph(onnx, batch=1):
    """YOLOv8's output shape in small ([1, 84, 16]: 4 box values and 80
    class scores for 16 candidates), every value the input's mean: enough
    for GStreamer 1.28's yolov8tensordec to link and read it. BATCH "batch":
    the first dimension open, one output per frame of a batch."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("ReduceMean", ["images"], ["mean"], axes=[1, 2, 3], keepdims=1),
        helper.make_node("Expand", ["mean", "shape"], ["wide"]),
        helper.make_node("Reshape", ["wide", "out_shape"], ["output0"]),
    ]
    graph = helper.make_graph(
        nodes,
        "yolo",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [batch, 3, 32, 32])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [batch, 84, 16])],
        [
            helper.make_tensor("shape", TensorProto.INT64, [4], [1, 1, 84, 16]),
            helper.make_tensor("out_shape", TensorProto.INT64, [3], [1 if batch == 1 else -1, 84, 16]),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def yolo_modelinfo(input_dims, output_dims):
    """GStreamer 1.28's .modelinfo of a model in YOLOv8's layout (yolo.onnx,
    ball.onnx): its output is upstream's yolo-v8-out, the id the decoders
    look for; its input takes values in [0, 1]."""
    dims = lambda d: ",".join(str(v) for v in d)
    return ("[modelinfo]\nversion=1.0\ngroup-id=yolo-v8-out\n\n"
            "[images]\nid=images\ntype=float32\ndims=%s\ndir=input\nranges=0.0,1.0\n\n"
            "[output0]\nid=yolo-v8-out\ntype=float32\ndims=%s\ndir=output\ndims-order=col-major\n"
            % (dims(input_dims), dims(output_dims)))


def ball_graph(onnx, np, size=640, batch=1):
    """The bright pixels' extent as one YOLOv8 candidate. mask: channel mean
    above 0.5; a column (row) holds the ball when its maximum over the rows
    (columns) is 1; the last such column is max(present * index), the first
    size - 1 - max(present * (size - 1 - index)). The extent is inclusive, so
    w = last - first + 1 and cx = (first + last + 1) / 2: yolov8tensordec's
    box x = cx - w / 2 is the first column exactly (whole numbers and halves
    are exact in float32). The score is the mask's maximum: 0 on a black
    frame (and in black letterbox padding), where the box means nothing and
    the decoder's class threshold drops it. BATCH "batch": the first
    dimension open, one candidate per frame of the batch."""
    from onnx import TensorProto, helper, numpy_helper

    index = np.arange(size, dtype=np.float32).reshape(1, size)
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["level"], axes=[1], keepdims=0),  # [1,H,W]
        helper.make_node("Greater", ["level", "half"], ["bright"]),
        helper.make_node("Cast", ["bright"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("ReduceMax", ["mask"], ["columns"], axes=[1], keepdims=0),  # [1,W]
        helper.make_node("ReduceMax", ["mask"], ["rows"], axes=[2], keepdims=0),  # [1,H]
        helper.make_node("ReduceMax", ["mask"], ["score"], axes=[1, 2], keepdims=0),  # [1]
    ]
    for axis, present in (("x", "columns"), ("y", "rows")):
        nodes += [
            helper.make_node("Mul", [present, "index"], [axis + "_at"]),
            helper.make_node("ReduceMax", [axis + "_at"], [axis + "_last"], axes=[1], keepdims=0),
            helper.make_node("Mul", [present, "index_back"], [axis + "_back"]),
            helper.make_node("ReduceMax", [axis + "_back"], [axis + "_first_back"], axes=[1], keepdims=0),
            helper.make_node("Sub", ["last_index", axis + "_first_back"], [axis + "_first"]),
            helper.make_node("Sub", [axis + "_last", axis + "_first"], [axis + "_span"]),
            helper.make_node("Add", [axis + "_span", "one"], [axis + "_size"]),
            helper.make_node("Add", [axis + "_first", axis + "_last"], [axis + "_ends"]),
            helper.make_node("Add", [axis + "_ends", "one"], [axis + "_ends1"]),
            helper.make_node("Mul", [axis + "_ends1", "half"], [axis + "_centre"]),
        ]
    values = ["x_centre", "y_centre", "x_size", "y_size", "score"]
    if batch == 1:
        nodes += [
            # [1] each: cx, cy, w, h, score -> [5] -> [1,5,1] (candidate-minor, as YOLOv8's [1,84,8400])
            helper.make_node("Concat", values, ["box"], axis=0),
            helper.make_node("Reshape", ["box", "out_shape"], ["output0"]),
        ]
    else:
        # [N] each -> [N,1] each -> [N,5] -> [N,5,1]: frame n's candidate in row n
        nodes += [helper.make_node("Reshape", [v, "column"], [v + "_col"]) for v in values]
        nodes += [
            helper.make_node("Concat", [v + "_col" for v in values], ["box"], axis=1),
            helper.make_node("Reshape", ["box", "out_shape"], ["output0"]),
        ]
    graph = helper.make_graph(
        nodes,
        "ball",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [batch, 3, size, size])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [batch, 5, 1])],
        [
            numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
            numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
            numpy_helper.from_array(np.array(size - 1, dtype=np.float32), "last_index"),
            numpy_helper.from_array(index, "index"),
            numpy_helper.from_array(np.ascontiguousarray(index[:, ::-1]), "index_back"),
            numpy_helper.from_array(np.array([1 if batch == 1 else -1, 5, 1], dtype=np.int64), "out_shape"),
        ] + ([] if batch == 1 else [numpy_helper.from_array(np.array([-1, 1], dtype=np.int64), "column")]),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def passthrough_graph(onnx):
    from onnx import TensorProto, helper

    dims = ["batch", 3, "height", "width"]
    graph = helper.make_graph(
        [],
        "passthrough",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, dims)],
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, dims)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def echo_graph(onnx, np):
    from onnx import TensorProto, helper

    dims = ["batch", 3, "height", "width"]
    model = weighted_graph(onnx, np, dims, "echo")
    model.graph.output.insert(0, helper.make_tensor_value_info("images", TensorProto.FLOAT, dims))
    return model


def nonzero_graph(onnx, np, threshold, name):
    """What an in-graph NMS does to a detector's outputs, in small: their
    length is the number of pixels whose channel mean exceeds THRESHOLD."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("ReduceMean", ["images"], ["level"], axes=[1], keepdims=0),
        helper.make_node("Reshape", ["level", "flat_shape"], ["flat"]),
        helper.make_node("Greater", ["flat", "threshold"], ["mask"]),
        helper.make_node("NonZero", ["mask"], ["found"]),
        helper.make_node("Reshape", ["found", "flat_shape"], ["indices"]),
        helper.make_node("Gather", ["flat", "indices"], ["values"], axis=0),
    ]
    graph = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "height", "width"])],
        [
            helper.make_tensor_value_info("indices", TensorProto.INT64, ["detections"]),
            helper.make_tensor_value_info("values", TensorProto.FLOAT, ["detections"]),
        ],
        [
            numpy_helper.from_array(np.array([-1], dtype=np.int64), "flat_shape"),
            numpy_helper.from_array(np.array(threshold, dtype=np.float32), "threshold"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def huge_graph(onnx, np):
    from onnx import TensorProto, helper, numpy_helper

    elements = 1 << 30
    nodes = [
        helper.make_node("ReduceMean", ["images"], ["level"], keepdims=0),
        helper.make_node("Expand", ["level", "huge_shape"], ["huge"]),
    ]
    graph = helper.make_graph(
        nodes,
        "huge",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, "height", "width"])],
        [helper.make_tensor_value_info("huge", TensorProto.FLOAT, [elements])],
        [numpy_helper.from_array(np.array([elements], dtype=np.int64), "huge_shape")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def make(directory):
    onnx = need("onnx", "python3-onnx")
    np = need("numpy", "python3-numpy")
    os.makedirs(directory, exist_ok=True)
    # IR version 8: what ONNX Runtime 1.21 reads (onnx 1.17 would write 10).
    models = {
        "weighted.onnx": weighted_graph(onnx, np, ["batch", 3, "height", "width"], "weighted"),
        "bytes.onnx": bytes_graph(onnx),
        "wide.onnx": weighted_graph(onnx, np, [1, 3, 32, 32], "wide"),
        "classifier.onnx": classifier_graph(onnx, np),
        "classifier_batch.onnx": classifier_graph(onnx, np, "batch"),
        "classifier640.onnx": classifier_graph(onnx, np, size=640),
        "classifier640_batch.onnx": classifier_graph(onnx, np, "batch", 640),
        "passthrough.onnx": passthrough_graph(onnx),
        "echo.onnx": echo_graph(onnx, np),
        "nonzero.onnx": nonzero_graph(onnx, np, 0.5, "nonzero"),
        "nonzero_low.onnx": nonzero_graph(onnx, np, -0.5, "nonzero_low"),
        "huge.onnx": huge_graph(onnx, np),
        "yolo.onnx": yolo_graph(onnx),
        "yolo_batch.onnx": yolo_graph(onnx, "batch"),
        "ball.onnx": ball_graph(onnx, np),
        "ball_batch.onnx": ball_graph(onnx, np, batch="batch"),
    }
    for name, model in models.items():
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(directory, name))
    for name, input_dims, output_dims in (("yolo.onnx", [1, 3, 32, 32], [1, 84, 16]),
                                          ("yolo_batch.onnx", [-1, 3, 32, 32], [-1, 84, 16]),
                                          ("ball.onnx", [1, 3, 640, 640], [1, 5, 1]),
                                          ("ball_batch.onnx", [-1, 3, 640, 640], [-1, 5, 1])):
        with open(os.path.join(directory, name + ".modelinfo"), "w") as f:
            f.write(yolo_modelinfo(input_dims, output_dims))
    with open(os.path.join(directory, "garbage.onnx"), "wb") as f:
        f.write(b"this is not a protobuf, let alone an ONNX model\n" * 4)


def annotate(source, destination):
    """A copy of SOURCE whose metadata names each output's tensor id (the
    output's own name), as GStreamer's onnxinference 1.26 requires, with
    DESTINATION.modelinfo beside it, which 1.28's reads instead: the same
    ids, the input in [0, 1] (ranges), every open dimension -1."""
    onnx = need("onnx", "python3-onnx")
    from onnx import helper

    model = onnx.load(source)
    helper.set_model_props(model, {o.name: o.name for o in model.graph.output})
    onnx.save(model, destination)
    names = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 10: "float16", 11: "float64"}
    initialisers = {i.name for i in model.graph.initializer}

    def section(value, direction):
        tensor = value.type.tensor_type
        dims = ",".join(str(d.dim_value) if d.HasField("dim_value") else "-1" for d in tensor.shape.dim)
        lines = ["[%s]" % value.name, "id=%s" % value.name, "type=%s" % names.get(tensor.elem_type, "undefined"),
                 "dims=%s" % dims, "dir=%s" % direction]
        if direction == "input":
            lines.append("ranges=0.0,1.0")
        return "\n".join(lines) + "\n"

    inputs = [i for i in model.graph.input if i.name not in initialisers]
    with open(destination + ".modelinfo", "w") as f:
        f.write("[modelinfo]\nversion=1.0\ngroup-id=%s\n\n" % model.graph.output[0].name)
        f.write("\n".join([section(i, "input") for i in inputs] + [section(o, "output") for o in model.graph.output]))


def main(argv):
    if len(argv) == 3 and argv[1] == "make":
        make(argv[2])
    elif len(argv) == 4 and argv[1] == "annotate":
        annotate(argv[2], argv[3])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
