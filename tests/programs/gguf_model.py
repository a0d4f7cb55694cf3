#!/usr/bin/env python3
"""Write a llama-architecture GGUF model with random weights (the gguf package's writer).

usage: gguf_model.py PATH [--size SIZE] [--experts N] [--used K] [--layers L]
                     [--embd D] [--ff F] [--vocab V] [--seed S]

The model is one llama.cpp loads and runs: architecture "llama", a
SentencePiece-style vocabulary ("llama" tokenizer: <unk>, <s>, </s>, the
256 byte tokens <0x00>..<0xFF>, single characters, "▁"-words), F32 norms
and F16 matrices drawn from a fixed seed, the output tied to the token
embeddings.  With --experts N it is a mixture of experts (N experts per
layer, K used per token): most of the file is expert weights, of which a
token reads K/N, which keeps a token cheap in an emulated guest however
large the file.  --size SIZE (bytes, K/M/G suffixes) picks the feed-forward
width F so that the file comes close to SIZE (never above it, unless even
F=32 is larger; F is a multiple of 8); otherwise F is --ff.

Writing is fast at any size: one pool of random values is made once, and
each tensor is a slice of it at a random offset (numpy only, no per-element
Python); one tensor at a time is in memory.  Prints one line: the path, the
file size, and the dimensions.
"""
import argparse
import os
import sys

import numpy as np
import gguf

POOL = 1 << 22          # random F16 values every tensor is cut from
ALIGN = 32              # gguf's default tensor alignment


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if s[-1:].upper() in mult:
        return int(float(s[:-1]) * mult[s[-1:].upper()])
    return int(s)


def vocabulary(n):
    """SentencePiece-style pieces, scores and types; exactly n entries."""
    tt = gguf.TokenType
    pieces = ["<unk>", "<s>", "</s>"]
    types = [tt.UNKNOWN, tt.CONTROL, tt.CONTROL]
    pieces += ["<0x%02X>" % b for b in range(256)]
    types += [tt.BYTE] * 256
    chars = [chr(c) for c in range(33, 127)]
    words = ("the of and to in is was for on that with as by at from it his an "
             "be are or which had this not but were one all have they she he "
             "her there been their we more time once upon a story model page "
             "table file cache morsel memory map read write llama token").split()
    normal = ["\u2581"] + chars + ["\u2581" + c for c in chars if c.isalnum()]
    normal += ["\u2581" + w for w in words if len(w) > 1]
    normal += [w for w in words if len(w) > 1]
    seen = set(pieces)
    extra = []
    for p in normal:
        if p not in seen:
            seen.add(p)
            extra.append(p)
    i = 0
    while len(pieces) + len(extra) < n:     # filler pieces to reach n
        p = "\u2581tok%d" % i
        i += 1
        if p not in seen:
            seen.add(p)
            extra.append(p)
    extra = extra[:max(0, n - len(pieces))]
    if len(pieces) + len(extra) < n or n < len(pieces) + 1:
        sys.exit(f"gguf_model.py: --vocab must be at least {len(pieces) + 1}")
    # Longer pieces win: SentencePiece merges by score.
    scores = [0.0] * len(pieces) + [float(len(p)) - i * 1e-4 for i, p in enumerate(extra)]
    types += [tt.NORMAL] * len(extra)
    return pieces + extra, scores, [int(t) for t in types]


def tensor_list(a):
    """(name, shape in numpy order, numpy dtype) of every tensor, in file order."""
    d, f, v, n = a.embd, a.ff, a.vocab, a.experts
    ts = [("token_embd.weight", (v, d), np.float16)]
    for i in range(a.layers):
        b = f"blk.{i}."
        ts += [(b + "attn_norm.weight", (d,), np.float32),
               (b + "attn_q.weight", (d, d), np.float16),
               (b + "attn_k.weight", (d, d), np.float16),
               (b + "attn_v.weight", (d, d), np.float16),
               (b + "attn_output.weight", (d, d), np.float16),
               (b + "ffn_norm.weight", (d,), np.float32)]
        if n:
            ts += [(b + "ffn_gate_inp.weight", (n, d), np.float32),
                   (b + "ffn_gate_exps.weight", (n, f, d), np.float16),
                   (b + "ffn_down_exps.weight", (n, d, f), np.float16),
                   (b + "ffn_up_exps.weight", (n, f, d), np.float16)]
        else:
            ts += [(b + "ffn_gate.weight", (f, d), np.float16),
                   (b + "ffn_down.weight", (d, f), np.float16),
                   (b + "ffn_up.weight", (f, d), np.float16)]
    ts.append(("output_norm.weight", (d,), np.float32))
    return ts


def data_size(a):
    pad = lambda x: (x + ALIGN - 1) // ALIGN * ALIGN
    return sum(pad(int(np.prod(s)) * np.dtype(t).itemsize) for _, s, t in tensor_list(a))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("path")
    ap.add_argument("--size", type=parse_size)
    ap.add_argument("--experts", type=int, default=0)
    ap.add_argument("--used", type=int, default=1)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--embd", type=int, default=256)
    ap.add_argument("--ff", type=int, default=512)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.embd % a.heads or (a.embd // a.heads) % 2:
        sys.exit("gguf_model.py: --embd must be a multiple of 2 * --heads")
    if a.experts and not 1 <= a.used <= a.experts:
        sys.exit("gguf_model.py: --used must be between 1 and --experts")
    if a.size is not None:
        # Every byte but the ff-wide matrices' is fixed; the header
        # (vocabulary, tensor infos) stays under 64 KiB here.
        a.ff = 0
        fixed = data_size(a) + 65536
        per_ff = a.layers * max(a.experts, 1) * 3 * a.embd * 2
        a.ff = max(32, (a.size - fixed) // per_ff // 8 * 8)

    tokens, scores, types = vocabulary(a.vocab)
    w = gguf.GGUFWriter(a.path, "llama")
    w.add_name(f"morsels random llama {a.layers}x{a.embd}"
               + (f" {a.experts}x{a.ff} experts" if a.experts else f" ff {a.ff}"))
    w.add_context_length(a.ctx)
    w.add_embedding_length(a.embd)
    w.add_block_count(a.layers)
    w.add_feed_forward_length(a.ff)
    w.add_head_count(a.heads)
    w.add_head_count_kv(a.heads)
    w.add_rope_dimension_count(a.embd // a.heads)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(a.vocab)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    if a.experts:
        w.add_expert_count(a.experts)
        w.add_expert_used_count(a.used)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    ts = tensor_list(a)
    for name, shape, dt in ts:
        w.add_tensor_info(name, shape, np.dtype(dt), int(np.prod(shape)) * np.dtype(dt).itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()

    rng = np.random.default_rng(a.seed)
    # Twice the pool, so any slice of up to POOL values starting in the
    # first half is contiguous.
    pool = (rng.standard_normal(POOL, dtype=np.float32) * 0.05).astype(np.float16)
    pool = np.concatenate([pool, pool])
    for name, shape, dt in ts:
        n = int(np.prod(shape))
        if name.endswith("norm.weight"):
            t = (1.0 + pool[:n].astype(np.float32)).astype(dt)
        elif dt == np.float32:
            off = int(rng.integers(POOL))
            t = np.resize(pool[off:off + POOL], n).astype(np.float32) * 20
        elif n <= POOL:
            off = int(rng.integers(POOL))
            t = pool[off:off + n]
        else:
            # Pool-sized pieces, each at its own offset: np.resize repeats
            # one offset's piece; the offsets vary the tensor along its length.
            offs = rng.integers(POOL, size=(n + POOL - 1) // POOL)
            t = np.empty(n, dtype=np.float16)
            for k, off in enumerate(offs):
                piece = t[k * POOL:(k + 1) * POOL]
                piece[:] = pool[off:off + len(piece)]
        w.write_tensor_data(np.ascontiguousarray(t).reshape(shape))
        del t
    w.close()
    size = os.path.getsize(a.path)
    print(f"{a.path}: {size} bytes, llama {a.layers} layers, embd {a.embd}, ff {a.ff}, "
          f"vocab {a.vocab}, experts {a.experts} (used {a.used if a.experts else 0})")


if __name__ == "__main__":
    main()
