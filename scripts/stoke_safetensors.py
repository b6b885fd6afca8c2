"""Reads a safetensors file into PyTorch tensors, with only torch: Debian's python3-torch has no
`safetensors` package, so `safetensors.torch.load_file` is not there.

    import sys; sys.path.insert(0, "scripts")   # from stoke's repository
    from stoke_safetensors import load_file
    net.load_state_dict(load_file("RUN/checkpoints/epoch-0003/model.safetensors"), strict=True)

The format, as its specification gives it: an 8-byte little-endian header length, a JSON header
(name -> dtype, shape, data_offsets into the data; "__metadata__" -> strings), then the raw
little-endian data. stoke writes F32 tensors only; the other common dtypes are read too.
"""
import json
import struct

DTYPES = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16",
          "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool"}


def load_file(path, metadata=None):
    """The tensors of the safetensors file at path, by name, on the CPU. When metadata is a dict,
    the file's __metadata__ strings are put in it."""
    import torch

    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError(f"{path}: {len(raw)} bytes, too short for a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError(f"{path}: header of {n} bytes in a file of {len(raw)}")
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None) or {}
    if metadata is not None:
        metadata.update(meta)
    data = raw[8 + n:]
    out = {}
    for name, h in header.items():
        if h["dtype"] not in DTYPES:
            raise ValueError(f"{path}: {name} has dtype {h['dtype']}, not one this reader knows ({', '.join(DTYPES)})")
        b, e = h["data_offsets"]
        if not 0 <= b <= e <= len(data):
            raise ValueError(f"{path}: {name}'s data_offsets [{b}, {e}] are outside the data ({len(data)} bytes)")
        t = torch.frombuffer(bytearray(data[b:e]), dtype=getattr(torch, DTYPES[h["dtype"]])) if e > b else \
            torch.empty(0, dtype=getattr(torch, DTYPES[h["dtype"]]))
        out[name] = t.reshape(h["shape"])
    return out
