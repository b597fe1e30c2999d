"""The `torch.nn` layers the counter knows: their signatures in torch's positional order,
the arguments that change their parameter count, and the parameters (names and shapes)
each one creates, as `nn.Module.__init__` would; plus the parameter-free layers and the
tensor constructors `nn.Parameter` is given."""

from __future__ import annotations

from typing import Any

from preflight.models.modules.values import Mod, Param, Unknown, deepcopy_value, shape_prod


NO_PARAM_LAYERS = {
    "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "Dropout",
    "Dropout1d", "Dropout2d", "Identity", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d",
    "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool2d",
    "LeakyReLU", "ELU", "Mish", "Hardswish", "Softplus", "Upsample", "ZeroPad2d", "ReLU6",
    "CrossEntropyLoss", "MSELoss", "NLLLoss", "PixelShuffle", "GLU", "Softsign",
}
TENSOR_CTORS = {"zeros", "ones", "randn", "rand", "empty", "full", "eye", "arange", "tensor"}

# ----------------------------------------------------------------- layer signatures


def sig_names(sig: list) -> list[str]:
    return [s if isinstance(s, str) else s[0] for s in sig]


_REQ = object()

#: name → [param or (param, default)], in torch's positional order.
LAYER_SIGS: dict[str, list] = {
    "Linear": ["in_features", "out_features", ("bias", True)],
    "Bilinear": ["in1_features", "in2_features", "out_features", ("bias", True)],
    "LazyLinear": ["out_features", ("bias", True)],
    "Embedding": ["num_embeddings", "embedding_dim", ("padding_idx", None)],
    "EmbeddingBag": ["num_embeddings", "embedding_dim"],
    "LayerNorm": ["normalized_shape", ("eps", 1e-5), ("elementwise_affine", True),
                  ("bias", True)],
    "RMSNorm": ["normalized_shape", ("eps", None), ("elementwise_affine", True)],
    "GroupNorm": ["num_groups", "num_channels", ("eps", 1e-5), ("affine", True)],
    "BatchNorm1d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", True)],
    "BatchNorm2d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", True)],
    "BatchNorm3d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", True)],
    "InstanceNorm1d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", False)],
    "InstanceNorm2d": ["num_features", ("eps", 1e-5), ("momentum", 0.1), ("affine", False)],
    "Conv1d": ["in_channels", "out_channels", "kernel_size", ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("bias", True)],
    "Conv2d": ["in_channels", "out_channels", "kernel_size", ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("bias", True)],
    "Conv3d": ["in_channels", "out_channels", "kernel_size", ("stride", 1), ("padding", 0),
               ("dilation", 1), ("groups", 1), ("bias", True)],
    "ConvTranspose1d": ["in_channels", "out_channels", "kernel_size", ("stride", 1),
                        ("padding", 0), ("output_padding", 0), ("groups", 1), ("bias", True)],
    "ConvTranspose2d": ["in_channels", "out_channels", "kernel_size", ("stride", 1),
                        ("padding", 0), ("output_padding", 0), ("groups", 1), ("bias", True)],
    "MultiheadAttention": ["embed_dim", "num_heads", ("dropout", 0.0), ("bias", True),
                           ("add_bias_kv", False), ("add_zero_attn", False), ("kdim", None),
                           ("vdim", None)],
    "RNN": ["input_size", "hidden_size", ("num_layers", 1), ("nonlinearity", "tanh"),
            ("bias", True), ("batch_first", False), ("dropout", 0.0),
            ("bidirectional", False)],
    "GRU": ["input_size", "hidden_size", ("num_layers", 1), ("bias", True),
            ("batch_first", False), ("dropout", 0.0), ("bidirectional", False)],
    "LSTM": ["input_size", "hidden_size", ("num_layers", 1), ("bias", True),
             ("batch_first", False), ("dropout", 0.0), ("bidirectional", False),
             ("proj_size", 0)],
    "GRUCell": ["input_size", "hidden_size", ("bias", True)],
    "LSTMCell": ["input_size", "hidden_size", ("bias", True)],
    "RNNCell": ["input_size", "hidden_size", ("bias", True)],
    "PReLU": [("num_parameters", 1)],
    "TransformerEncoderLayer": ["d_model", "nhead", ("dim_feedforward", 2048),
                                ("dropout", 0.1), ("activation", "relu"),
                                ("layer_norm_eps", 1e-5), ("batch_first", False),
                                ("norm_first", False), ("bias", True)],
    "TransformerDecoderLayer": ["d_model", "nhead", ("dim_feedforward", 2048),
                                ("dropout", 0.1), ("activation", "relu"),
                                ("layer_norm_eps", 1e-5), ("batch_first", False),
                                ("norm_first", False), ("bias", True)],
    "TransformerEncoder": ["encoder_layer", "num_layers", ("norm", None)],
    "TransformerDecoder": ["decoder_layer", "num_layers", ("norm", None)],
    "Transformer": [("d_model", 512), ("nhead", 8), ("num_encoder_layers", 6),
                    ("num_decoder_layers", 6), ("dim_feedforward", 2048), ("dropout", 0.1),
                    ("activation", "relu"), ("custom_encoder", None),
                    ("custom_decoder", None), ("layer_norm_eps", 1e-5),
                    ("batch_first", False), ("norm_first", False), ("bias", True)],
}

#: the arguments that change the parameter count (others may stay unknown)
LAYER_NEEDS: dict[str, set[str]] = {
    "Linear": {"in_features", "out_features", "bias"},
    "Embedding": {"num_embeddings", "embedding_dim"},
    "LayerNorm": {"normalized_shape", "elementwise_affine", "bias"},
    "RMSNorm": {"normalized_shape", "elementwise_affine"},
    "MultiheadAttention": {"embed_dim", "bias", "add_bias_kv", "kdim", "vdim"},
    "TransformerEncoderLayer": {"d_model", "dim_feedforward", "bias"},
    "TransformerDecoderLayer": {"d_model", "dim_feedforward", "bias"},
    "Transformer": {"d_model", "num_encoder_layers", "num_decoder_layers",
                    "dim_feedforward", "bias", "custom_encoder", "custom_decoder"},
    "RNN": {"input_size", "hidden_size", "num_layers", "bias", "bidirectional"},
    "GRU": {"input_size", "hidden_size", "num_layers", "bias", "bidirectional"},
    "LSTM": {"input_size", "hidden_size", "num_layers", "bias", "bidirectional",
             "proj_size"},
}
for _n in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d"):
    LAYER_NEEDS[_n] = {"num_features", "affine"}
for _n in ("Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d"):
    LAYER_NEEDS[_n] = {"in_channels", "out_channels", "kernel_size", "groups", "bias"}


def bind_sig(sig: list, args: list, kwargs: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    args = list(args)
    for s in sig:
        name, default = (s, _REQ) if isinstance(s, str) else s
        if args:
            out[name] = args.pop(0)
        elif name in kwargs:
            out[name] = kwargs[name]
        elif default is not _REQ:
            out[name] = default
        else:
            out[name] = Unknown(f"{name} not given")
    return out


def _p(m: Mod, name: str, *shape: int) -> None:
    m.params[name] = Param(shape_prod(shape), tuple(shape))


def _ntuple(v: Any, n: int) -> tuple:
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _linear(m: Mod, a: dict) -> None:
    i, o = a["in_features"], a["out_features"]
    m.attrs.update(in_features=i, out_features=o)
    _p(m, "weight", o, i)
    if a["bias"]:
        _p(m, "bias", o)


def _embedding(m: Mod, a: dict) -> None:
    m.attrs.update(num_embeddings=a["num_embeddings"], embedding_dim=a["embedding_dim"])
    _p(m, "weight", a["num_embeddings"], a["embedding_dim"])


def _norm(m: Mod, a: dict, *, has_bias: bool) -> None:
    shape = _ntuple(a["normalized_shape"], 1)
    if a.get("elementwise_affine", True):
        _p(m, "weight", *shape)
        if has_bias and a.get("bias", True):
            _p(m, "bias", *shape)


def _batchnorm(m: Mod, a: dict) -> None:
    if a["affine"]:
        _p(m, "weight", a["num_features"])
        _p(m, "bias", a["num_features"])


def _groupnorm(m: Mod, a: dict) -> None:
    if a["affine"]:
        _p(m, "weight", a["num_channels"])
        _p(m, "bias", a["num_channels"])


def _conv(n: int, transpose: bool = False):
    def build(m: Mod, a: dict) -> None:
        k = _ntuple(a["kernel_size"], n)
        i, o, g = a["in_channels"], a["out_channels"], a["groups"]
        if transpose:
            _p(m, "weight", i, o // g, *k)
        else:
            _p(m, "weight", o, i // g, *k)
        if a["bias"]:
            _p(m, "bias", o)
    return build


def _mha(m: Mod, a: dict) -> None:
    E = a["embed_dim"]
    kd = a["kdim"] if a["kdim"] is not None else E
    vd = a["vdim"] if a["vdim"] is not None else E
    if kd == E and vd == E:
        _p(m, "in_proj_weight", 3 * E, E)
    else:
        _p(m, "q_proj_weight", E, E)
        _p(m, "k_proj_weight", E, kd)
        _p(m, "v_proj_weight", E, vd)
    if a["bias"]:
        _p(m, "in_proj_bias", 3 * E)
    out = Mod(kind="NonDynamicallyQuantizableLinear")
    _linear(out, {"in_features": E, "out_features": E, "bias": a["bias"]})
    m.children["out_proj"] = out
    if a["add_bias_kv"]:
        _p(m, "bias_k", 1, 1, E)
        _p(m, "bias_v", 1, 1, E)


def _rnn(gates: int):
    def build(m: Mod, a: dict) -> None:
        H, L = a["hidden_size"], a["num_layers"]
        dirs = 2 if a["bidirectional"] else 1
        proj = a.get("proj_size", 0) or 0
        out_h = proj if proj else H
        for layer in range(L):
            inp = a["input_size"] if layer == 0 else out_h * dirs
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                _p(m, "weight_ih" + sfx, gates * H, inp)
                _p(m, "weight_hh" + sfx, gates * H, out_h)
                if a["bias"]:
                    _p(m, "bias_ih" + sfx, gates * H)
                    _p(m, "bias_hh" + sfx, gates * H)
                if proj:
                    _p(m, "weight_hr" + sfx, proj, H)
    return build


def _cell(gates: int):
    def build(m: Mod, a: dict) -> None:
        H = a["hidden_size"]
        _p(m, "weight_ih", gates * H, a["input_size"])
        _p(m, "weight_hh", gates * H, H)
        if a["bias"]:
            _p(m, "bias_ih", gates * H)
            _p(m, "bias_hh", gates * H)
    return build


def _enc_layer(m: Mod, a: dict, decoder: bool = False) -> None:
    d, ff, bias = a["d_model"], a["dim_feedforward"], a["bias"]
    attn = Mod(kind="MultiheadAttention")
    _mha(attn, {"embed_dim": d, "kdim": None, "vdim": None, "bias": bias,
                "add_bias_kv": False})
    m.children["self_attn"] = attn
    if decoder:
        cross = Mod(kind="MultiheadAttention")
        _mha(cross, {"embed_dim": d, "kdim": None, "vdim": None, "bias": bias,
                     "add_bias_kv": False})
        m.children["multihead_attn"] = cross
    for name, i, o in (("linear1", d, ff), ("linear2", ff, d)):
        lin = Mod(kind="Linear")
        _linear(lin, {"in_features": i, "out_features": o, "bias": bias})
        m.children[name] = lin
    for k in range(3 if decoder else 2):
        n = Mod(kind="LayerNorm")
        _norm(n, {"normalized_shape": d, "bias": bias}, has_bias=True)
        m.children[f"norm{k + 1}"] = n


def _stack(m: Mod, a: dict, key: str) -> None:
    layer = a[key]
    if not isinstance(layer, Mod) or not isinstance(a["num_layers"], int):
        raise ValueError("layer or num_layers not known")
    layers = Mod(kind="ModuleList")
    for i in range(a["num_layers"]):
        layers.children[str(i)] = deepcopy_value(layer)
    m.children["layers"] = layers
    if isinstance(a["norm"], Mod):
        m.children["norm"] = a["norm"]


def _transformer(m: Mod, a: dict) -> None:
    d, ff, bias = a["d_model"], a["dim_feedforward"], a["bias"]

    def norm() -> Mod:
        n = Mod(kind="LayerNorm")
        _norm(n, {"normalized_shape": d, "bias": bias}, has_bias=True)
        return n
    for key, count, dec in (("encoder", a["num_encoder_layers"], False),
                            ("decoder", a["num_decoder_layers"], True)):
        custom = a[f"custom_{key}"]
        if isinstance(custom, Mod):
            m.children[key] = custom
            continue
        layer = Mod(kind="TransformerDecoderLayer" if dec else "TransformerEncoderLayer")
        _enc_layer(layer, {"d_model": d, "dim_feedforward": ff, "bias": bias}, decoder=dec)
        stack = Mod(kind=key)
        _stack(stack, {"layer": layer, "num_layers": count, "norm": norm()}, "layer")
        m.children[key] = stack


LAYER_BUILD = {
    "Linear": _linear,
    "Bilinear": lambda m, a: (_p(m, "weight", a["out_features"], a["in1_features"],
                                 a["in2_features"]),
                              a["bias"] and _p(m, "bias", a["out_features"])),
    "Embedding": _embedding,
    "EmbeddingBag": _embedding,
    "LayerNorm": lambda m, a: _norm(m, a, has_bias=True),
    "RMSNorm": lambda m, a: _norm(m, a, has_bias=False),
    "GroupNorm": _groupnorm,
    "BatchNorm1d": _batchnorm, "BatchNorm2d": _batchnorm, "BatchNorm3d": _batchnorm,
    "InstanceNorm1d": _batchnorm, "InstanceNorm2d": _batchnorm,
    "Conv1d": _conv(1), "Conv2d": _conv(2), "Conv3d": _conv(3),
    "ConvTranspose1d": _conv(1, True), "ConvTranspose2d": _conv(2, True),
    "MultiheadAttention": _mha,
    "RNN": _rnn(1), "GRU": _rnn(3), "LSTM": _rnn(4),
    "RNNCell": _cell(1), "GRUCell": _cell(3), "LSTMCell": _cell(4),
    "PReLU": lambda m, a: _p(m, "weight", a["num_parameters"]),
    "TransformerEncoderLayer": _enc_layer,
    "TransformerDecoderLayer": lambda m, a: _enc_layer(m, a, decoder=True),
    "TransformerEncoder": lambda m, a: _stack(m, a, "encoder_layer"),
    "TransformerDecoder": lambda m, a: _stack(m, a, "decoder_layer"),
    "Transformer": _transformer,
}
