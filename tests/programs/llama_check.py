#!/usr/bin/env python3
"""llama.cpp (xllamacpp) loads a GGUF model and generates tokens greedily.

usage: llama_check.py MODEL [--tokens N] [--threads T] [--prompt TEXT] [--times]
                      [--load-mode MODE]

The model is loaded as llama.cpp's server does it: load mode mmap (on Linux
llama.cpp maps the file MAP_SHARED | MAP_POPULATE, PROT_READ), lazy tensor
reading off, no warm-up run.  --load-mode picks another of llama.cpp's
modes (its --load-mode): auto (llama.cpp's default), mmap, mmap_mlock,
none (read into anonymous memory), mlock (read, then mlock) or direct_io
(read with O_DIRECT).  Then one completion of N tokens (default 16)
with greedy sampling (temperature 0, top_k 1, fixed seed, end of text
ignored, so always N tokens; the byte tokens <0x80>..<0xFF> of
gguf_model.py's vocabulary are excluded), one slot, T threads (default 1).  Prints

    tokens: ID ID ...       the generated token ids
    text: '...'             their text (repr)

and with --times one more line:

    times: init_ms X prompt_ms Y prompt_n P per_token_ms Z predicted_n N

init_ms is the wall time of xllamacpp.Server(...), which returns once the
model is loaded and the context made; the others are llama.cpp's own
timings of the completion.  llama.cpp's log goes to stderr.
"""
import argparse
import os
import sys
import tempfile
import time

import xllamacpp as xlc

BYTE0 = 3       # gguf_model.py's vocabulary: <0x00> follows <unk>, <s>, </s>


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--tokens", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt", default="Once upon a time the model read a page")
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--times", action="store_true")
    ap.add_argument("--load-mode", default="mmap",
                    choices=["auto", "mmap", "mmap_mlock", "none", "mlock", "direct_io"])
    a = ap.parse_args()

    p = xlc.CommonParams()
    p.model.path = a.model
    p.load_mode = getattr(xlc.llama_load_mode, "LLAMA_LOAD_MODE_" + a.load_mode.upper())
    p.lazy_mode = xlc.llama_lazy_mode.LLAMA_LAZY_MODE_OFF
    p.warmup = False
    p.n_ctx = a.ctx
    p.n_parallel = 1
    p.n_predict = a.tokens
    p.cpuparams.n_threads = a.threads
    p.cpuparams_batch.n_threads = a.threads
    p.cache_ram_mib = 0
    # The server also listens for HTTP, never used here: on a UNIX socket
    # (a ".sock" host), so no network (the test VM has no loopback).
    sock = os.path.join(tempfile.gettempdir(), f"llama_check.{os.getpid()}.sock")
    p.hostnames = [sock]

    t0 = time.monotonic()
    server = xlc.Server(p)
    init_ms = (time.monotonic() - t0) * 1000
    r = server.handle_completions({
        "prompt": a.prompt, "max_tokens": a.tokens, "temperature": 0.0,
        "top_k": 1, "seed": 42, "ignore_eos": True, "cache_prompt": False,
        "n_probs": 1,
        # Never a byte token of 0x80..0xff: one alone is not UTF-8, and the
        # server leaves a token whose text is incomplete out of the
        # logprobs that give the ids (every other piece is ASCII).
        "logit_bias": [[id_, False] for id_ in range(BYTE0 + 0x80, BYTE0 + 0x100)],
    })
    if "choices" not in r:
        sys.exit(f"llama_check.py: the completion failed: {r}")
    content = r["choices"][0]["logprobs"]["content"]
    ids = [c["id"] for c in content]
    if len(ids) != a.tokens:
        sys.exit(f"llama_check.py: {len(ids)} tokens generated, asked for {a.tokens}")
    print("tokens:", " ".join(map(str, ids)))
    print("text:", repr(r["choices"][0]["text"]))
    if a.times:
        t = r["timings"]
        print(f"times: init_ms {init_ms:.3f} prompt_ms {t['prompt_ms']:.3f} prompt_n {t['prompt_n']} "
              f"per_token_ms {t['predicted_per_token_ms']:.3f} predicted_n {t['predicted_n']}")
    sys.stdout.flush()
    del server
    if os.path.exists(sock):
        os.unlink(sock)


if __name__ == "__main__":
    main()
