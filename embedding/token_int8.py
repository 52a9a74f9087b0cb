"""The `int8-token` query model: integer matmuls with each token's activations quantized apart.

Why not onnxruntime's own recipes (embedding/quantized_model.py): its dynamic quantizer gives a
whole activation tensor one scale, and a BERT layer's inputs hold a few channels and tokens far
larger than the rest, so most values get a handful of levels (query vectors at cosine ~0.99 to
fp32, SciFact ranked worse); its block quantizer (`MatMulNBits`, cosine ~0.999) has no 8-bit
integer kernel for CPUs with AVX2 alone and runs there at fp32 speed. This one is both close and
fast on such CPUs, using only standard ONNX operators that onnxruntime runs with its u8 x s8
integer kernels:

- Tokens: each row (token) of a matmul's input is stored from its own minimum to its own
  maximum in 255 u8 steps, so a loud [CLS] or [SEP] no longer flattens the others and no level
  is spent on a sign a row does not use. The shift comes back exactly after the integer
  product: row minimum x the weight's column sums.
- Channels (SmoothQuant, Xiao et al. 2023): input channel j is divided by s_j and the weight's
  row j multiplied by it, s_j = max|x_j|^ALPHA / max|w_j|^(1 - ALPHA), with max|x_j| measured
  on CALIBRATION (memhub's own docs, frozen). The product is unchanged; the outlier channels'
  range moves partly into the weights, which are quantized per output column. s is rounded to
  a power of 2^(1/16), so the copy does not depend on the last bits of a calibration run.
- Weights: 7 bits (|q| <= 63), as onnxruntime's `reduce_range`: on AVX2 without VNNI the u8 x
  s8 kernel adds pairs of products in 16 bits, which 8-bit weights could saturate.

One input read by several matmuls (a layer's Q, K and V) is scaled and quantized once.

When to use it (MEMHUB_QUERY_QUANTIZE=int8-token; int8-block stays the default): on CPUs with
AVX2 alone, measured on an AMD EPYC host, 2 cores, one query, a variant with rows symmetric
around 0 in 255 levels took 5.5 ms against 7.4 ms for int8-block and 9.3 for fp32,
a search ~3 ms less end to end; on a host with AVX-512 VNNI, int8-block's kernel is as
fast (3.3 ms against 3.1 for int8-block, 5.2 for fp32) and closer. Query vectors at cosine
0.9986 to fp32 on average over the eval set's queries and memories (0.9979 at worst), against
0.9992 for int8-block and 0.9925 for the dynamic recipe (docs/performance.md).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

CALIBRATION = Path(__file__).parent / "calibration" / "query_texts.txt"
ALPHA = 0.5  # 0.3-0.8 measured: 0.5 closest to fp32 (docs/performance.md)
WEIGHT_LEVELS = 63  # 7-bit weights, see the module docstring
ACTIVATION_LEVELS = 255  # each row from its minimum to its maximum, in u8
CALIBRATION_TOKENS = 256  # the model's training length (MEMHUB_EMBED_MAX_TOKENS' default)
# s is rounded to 2^(n / STEPS_PER_OCTAVE): steps of 4.4%, coarse enough that a calibration
# run differing in its last bits gives the same copy, fine enough to cost nothing measurable.
STEPS_PER_OCTAVE = 16


def quantize_per_token(source: Path, target: Path, texts: list[str]) -> None:
    """Write the int8-token copy of the ONNX model `source` to `target`, calibrated on `texts`.
    Raises ValueError when the model has no weight matmul to quantize."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(source)
    weights = {i.name: i for i in model.graph.initializer}
    by_input: dict[str, list] = {}
    for node in model.graph.node:
        if (node.op_type == "MatMul" and node.input[1] in weights
                and len(weights[node.input[1]].dims) == 2):
            by_input.setdefault(node.input[0], []).append(node)
    if not by_input:
        raise ValueError(f"{source.name} has no weight matmul to quantize")
    channel_max = _activation_max(model, source.parent, list(by_input), texts)
    constants: list = []
    before: dict[str, list] = {}  # a group's first matmul -> the nodes quantizing its input
    instead: dict[str, list] = {}  # each matmul -> the nodes replacing it
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    constants += _shared_constants(opset)
    for g, (name, matmuls) in enumerate(by_input.items()):
        matrices = [numpy_helper.to_array(weights[m.input[1]]).astype(np.float64)
                    for m in matmuls]
        smooth = _smoothing(channel_max[name],
                            np.max([np.abs(w).max(axis=1) for w in matrices], axis=0))
        prefix = f"memhub_tq{g}"
        constants.append(numpy_helper.from_array((1.0 / smooth).astype(np.float32),
                                                 f"{prefix}_unsmooth"))
        before[matmuls[0].name] = _quantize_rows(name, prefix, opset)
        for k, (matmul, w) in enumerate(zip(matmuls, matrices, strict=True)):
            scaled = w * smooth[:, None]
            column = np.maximum(np.abs(scaled).max(axis=0) / WEIGHT_LEVELS, 1e-12)
            levels = np.clip(np.rint(scaled / column), -WEIGHT_LEVELS, WEIGHT_LEVELS)
            # Each row was shifted by its minimum: its product gains low x (column sums of W).
            sums = levels.sum(axis=0) * column
            constants += [
                numpy_helper.from_array(levels.astype(np.int8), f"{prefix}_{k}_w"),
                numpy_helper.from_array(column.astype(np.float32), f"{prefix}_{k}_wscale"),
                numpy_helper.from_array(sums.astype(np.float32), f"{prefix}_{k}_wsum"),
            ]
            instead[matmul.name] = _integer_matmul(prefix, k, matmul.output[0])
    nodes = []
    for node in model.graph.node:
        nodes += before.get(node.name, [])
        nodes += instead.get(node.name, [node])
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    used = {name for node in model.graph.node for name in node.input}
    kept = [i for i in model.graph.initializer if i.name in used] + constants
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    onnx.checker.check_model(model)
    onnx.save(model, target)


def _smoothing(activation: np.ndarray, weight: np.ndarray) -> np.ndarray:
    raw = (np.maximum(activation, 1e-5) ** ALPHA) / (np.maximum(weight, 1e-5) ** (1 - ALPHA))
    return np.exp2(np.rint(np.log2(raw) * STEPS_PER_OCTAVE) / STEPS_PER_OCTAVE)


def _activation_max(model, model_dir: Path, names: list[str], texts: list[str]) -> dict:
    """Per-channel max |x| of each named tensor over `texts`, by the fp32 model itself."""
    import onnx
    import onnxruntime as ort
    from tokenizers import Tokenizer

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    for name in names:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(
            name, onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    # Unoptimised and on one thread: the maxima must not depend on the machine's fusions.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(probe.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(CALIBRATION_TOKENS)
    found: dict[str, np.ndarray] = {}
    for text in texts:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids),
                "token_type_ids": np.zeros_like(ids)}
        outputs = session.run(names, {k: v for k, v in feed.items() if k in inputs})
        for name, value in zip(names, outputs, strict=True):
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            found[name] = np.maximum(found[name], peak) if name in found else peak
    return found


def _shared_constants(opset: int) -> list:
    from onnx import numpy_helper

    axis = [numpy_helper.from_array(np.array([-1], dtype=np.int64), "memhub_tq_last_axis")]
    return (axis if opset >= 18 else []) + [
        numpy_helper.from_array(np.array(1 / ACTIVATION_LEVELS, dtype=np.float32),
                                "memhub_tq_per_level"),
        numpy_helper.from_array(np.array(1e-12, dtype=np.float32), "memhub_tq_floor"),
        numpy_helper.from_array(np.array(0, dtype=np.uint8), "memhub_tq_zero"),
    ]


def _quantize_rows(source: str, p: str, opset: int) -> list:
    """source / smoothing -> each row from its minimum (`{p}_low`) in 255 steps of `{p}_scale`,
    as u8 levels (`{p}_q`) with zero point 0."""
    from onnx import TensorProto, helper

    def reduce(op: str, x: str, out: str):
        # ReduceMin/Max take their axes as an attribute up to opset 17, as an input from 18.
        if opset < 18:
            return helper.make_node(op, [x], [out], keepdims=1, axes=[-1])
        return helper.make_node(op, [x, "memhub_tq_last_axis"], [out], keepdims=1)

    return [
        helper.make_node("Mul", [source, f"{p}_unsmooth"], [f"{p}_x"]),
        reduce("ReduceMin", f"{p}_x", f"{p}_low"),
        reduce("ReduceMax", f"{p}_x", f"{p}_high"),
        helper.make_node("Sub", [f"{p}_high", f"{p}_low"], [f"{p}_span"]),
        helper.make_node("Max", [f"{p}_span", "memhub_tq_floor"], [f"{p}_span1"]),
        helper.make_node("Mul", [f"{p}_span1", "memhub_tq_per_level"], [f"{p}_scale"]),
        helper.make_node("Reciprocal", [f"{p}_scale"], [f"{p}_inv"]),
        helper.make_node("Sub", [f"{p}_x", f"{p}_low"], [f"{p}_from_low"]),
        helper.make_node("Mul", [f"{p}_from_low", f"{p}_inv"], [f"{p}_levels"]),
        helper.make_node("Round", [f"{p}_levels"], [f"{p}_rounded"]),
        helper.make_node("Cast", [f"{p}_rounded"], [f"{p}_q"], to=TensorProto.UINT8),
    ]


def _integer_matmul(p: str, k: int, output: str) -> list:
    """u8 rows x s8 weights in int32, back to float by the column and row scales, plus each
    row's minimum times the weight's column sums (the shift the rows were stored with)."""
    from onnx import TensorProto, helper

    return [
        helper.make_node("MatMulInteger", [f"{p}_q", f"{p}_{k}_w", "memhub_tq_zero"],
                         [f"{p}_{k}_int"]),
        helper.make_node("Cast", [f"{p}_{k}_int"], [f"{p}_{k}_float"], to=TensorProto.FLOAT),
        helper.make_node("Mul", [f"{p}_{k}_float", f"{p}_{k}_wscale"], [f"{p}_{k}_columns"]),
        helper.make_node("Mul", [f"{p}_{k}_columns", f"{p}_scale"], [f"{p}_{k}_rows"]),
        helper.make_node("Mul", [f"{p}_low", f"{p}_{k}_wsum"], [f"{p}_{k}_offset"]),
        helper.make_node("Add", [f"{p}_{k}_rows", f"{p}_{k}_offset"], [output]),
    ]
