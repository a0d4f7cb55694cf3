#!/usr/bin/python3
"""Servers whose whole heap comes from morsels (issue 23, FBMM's evaluation
items 2 and 3): memcached under memcaslap, and redis's BGSAVE.

usage: bench/mm_servers.py [--quick] [--runs N]

Runs in the VM as root (bench/all).  Every sample starts a fresh server,
as Linux runs it and under `morsel run --mm DIR` (DIR on a morselfs
instance of its own, huge=never) with anon=paged ("morsel") and with
anon=mounted ("mounted", a remount between samples), in an order that
rotates, and checks where its memory came from: a morsel run's server
must map morsels ("af" in its smaps VmFlags: patch 13's VM_ANON_FILE,
and for anon=mounted "mm", VM_MIXEDMAP), the Linux one none.

- memcached (Debian's, -t 2 -m 1024, TCP on loopback), driven by
  memcaslap (Debian's libmemcached-tools: -T 2, -c 32 connections with
  windows of 10k keys each (--quick: 8 of 1k), 1 KiB values, 64-byte
  keys, -x 200000 operations (--quick 20000)) in three mixes: "get" (read-only:
  memcaslap first stores its window of keys, then only gets), "mix"
  (50 % set, 50 % get), "set" (insert-only).  Metric tps: memcaslap's
  own TPS line (operations a second; a rate).
- redis (Debian's redis-server, jemalloc, no persistence of its own):
  DEBUG POPULATE 10^6 keys (--quick 20000) of 1000 bytes, then BGSAVE while
  redis-benchmark keeps writing (SET with pipelining), until INFO says
  the save ended.  Metrics: fork_usec (redis's own latest_fork_usec),
  bgsave_ms (BGSAVE to the end of the save, polled every 10 ms).  The
  dump must pass redis-check-rdb ("RDB looks OK", every populated key
  read) and the save must report ok, or the run fails.

Prints "csv,mmsrv,VARIANT,PARAM,ITERATION,METRIC,VALUE" (bench/run's
format; VARIANT linux-get, morsel-get, mounted-get, ..., linux-redis,
morsel-redis, mounted-redis;
PARAM the data set in MiB).  Under TCG the loopback clients and the
server share two emulated vCPUs: absolute rates mean little, the
ratios are what bench/report shows.
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MORSEL = os.path.join(REPO, "tools", "morsel")
MMDIR = "/tmp/bench-mmsrv"
WORK = "/tmp/bench-mmsrv-work"
MC_PORT = 22122
REDIS_PORT = 22123
MIXES = {"get": (0.0, 1.0), "mix": (0.5, 0.5), "set": (1.0, 0.0)}
SIDES = ("linux", "morsel", "mounted")


def die(msg):
    print(f"bench/mm_servers: {msg}", file=sys.stderr)
    sys.exit(1)


def mount_mm(size_mib):
    os.makedirs(MMDIR, exist_ok=True)
    subprocess.run(["umount", "-l", MMDIR], stderr=subprocess.DEVNULL)
    subprocess.run(["mount", "-t", "morselfs", "-o", f"size={size_mib}M,huge=never",
                    "none", MMDIR], check=True)


def wait_port(port, proc, what):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            die(f"{what} exited with status {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)
    die(f"{what} did not listen on port {port} within 60 s")


def use_side(side):
    """Remount the memory manager's instance for @side's anon= mode."""
    if side != "linux":
        mode = "mounted" if side == "mounted" else "paged"
        subprocess.run(["mount", "-o", f"remount,anon={mode}", MMDIR], check=True)


def start(side, argv, port, what):
    use_side(side)
    if side != "linux":
        argv = [MORSEL, "run", "--mm", MMDIR, "--"] + argv
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(f"{WORK}/{what}.err", "w"))
    wait_port(port, proc, what)
    return proc


def anon_file_vmas(pid, flag="af"):
    n = 0
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            flags = line.split()[1:] if line.startswith("VmFlags:") else ()
            if "af" in flags and flag in flags:
                n += 1
    return n


def check_manager(proc, side, what):
    n = anon_file_vmas(proc.pid)
    if side != "linux" and n == 0:
        die(f"{what} under morsel run maps no morsel (no 'af' VMA in its smaps)")
    if side == "mounted" and not anon_file_vmas(proc.pid, "mm"):
        die(f"{what} under anon=mounted has no mounted ('mm') morsel VMA")
    if side == "linux" and n:
        die(f"{what} without a memory manager maps {n} morsel VMAs")


def stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def memcached_sample(side, mix, ops, conns, window):
    setp, getp = MIXES[mix]
    cfg = f"{WORK}/memcaslap-{mix}.cfg"
    with open(cfg, "w") as f:
        f.write(f"key\n64 64 1\nvalue\n1024 1024 1\ncmd\n0 {setp}\n1 {getp}\n")
    srv = start(side, ["memcached", "-u", "root", "-t", "2", "-m", "1024", "-U", "0",
                         "-l", "127.0.0.1", "-p", str(MC_PORT)], MC_PORT, "memcached")
    try:
        out = subprocess.run(["memcaslap", "-s", f"127.0.0.1:{MC_PORT}", "-T", "2",
                              "-c", str(conns), "-w", f"{window // 1000}k", "-x", str(ops), "-F", cfg],
                             capture_output=True, text=True,
                             timeout=1800)
        check_manager(srv, side, "memcached")
    finally:
        stop(srv)
    m = re.search(r"TPS: (\d+)", out.stdout)
    if out.returncode or not m:
        die(f"memcaslap ({mix}) failed: status {out.returncode}\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
    return int(m.group(1))


def cli(*args, check=True):
    out = subprocess.run(["redis-cli", "-p", str(REDIS_PORT)] + list(args),
                         capture_output=True, text=True, timeout=600)
    if check and (out.returncode or out.stdout.startswith("ERR")):
        die(f"redis-cli {' '.join(args)}: {out.stdout}{out.stderr}")
    return out.stdout


def info(section):
    return dict(line.split(":", 1) for line in cli("INFO", section).splitlines()
                if ":" in line)


def redis_sample(side, keys):
    d = f"{WORK}/redis"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    srv = start(side, ["redis-server", "--port", str(REDIS_PORT), "--bind", "127.0.0.1",
                         "--save", "", "--appendonly", "no", "--dir", d,
                         "--enable-debug-command", "yes", "--daemonize", "no"],
                REDIS_PORT, "redis-server")
    writer = None
    try:
        cli("DEBUG", "POPULATE", str(keys), "key", "1000")
        # Clients keep writing during the save: SETs of other keys, 16
        # pipelined, far more than the save lasts (stopped after it).
        writer = subprocess.Popen(["redis-benchmark", "-p", str(REDIS_PORT), "-t", "set",
                                   "-n", "100000000", "-r", str(keys), "-d", "1000",
                                   "-P", "16", "-c", "4", "-q"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Wait until the writer's first SETs arrived.
        before = int(info("stats")["total_commands_processed"])
        deadline = time.monotonic() + 120
        while int(info("stats")["total_commands_processed"]) < before + 1000:
            if time.monotonic() > deadline:
                die("redis-benchmark wrote nothing within 120 s")
            time.sleep(0.01)
        t0 = time.monotonic()
        if "started" not in cli("BGSAVE"):
            die("BGSAVE did not start")
        while True:
            p = info("persistence")
            if p["rdb_bgsave_in_progress"].strip() == "0":
                break
            time.sleep(0.01)
        ms = (time.monotonic() - t0) * 1000
        written = int(info("stats")["total_commands_processed"]) - before
        if p["rdb_last_bgsave_status"].strip() != "ok":
            die(f"BGSAVE failed: {p}")
        fork_usec = int(info("stats")["latest_fork_usec"])
        check_manager(srv, side, "redis-server")
    finally:
        if writer:
            writer.kill()
            writer.wait()
        stop(srv)
    chk = subprocess.run(["redis-check-rdb", f"{d}/dump.rdb"], capture_output=True, text=True)
    out = chk.stdout + chk.stderr
    m = re.search(r"(\d+) keys read", out)
    if chk.returncode or "RDB looks OK" not in out or not m or int(m.group(1)) < keys:
        die(f"redis-check-rdb refused the dump:\n{out[-2000:]}")
    return fork_usec, ms, written


def main():
    ap = argparse.ArgumentParser(usage=__doc__.split("\n\n")[1])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int)
    a = ap.parse_args()
    runs = a.runs or (1 if a.quick else 3)
    ops = 20000 if a.quick else 200000
    conns, window = (8, 1000) if a.quick else (32, 10000)
    keys = 20000 if a.quick else 1000000
    os.makedirs(WORK, exist_ok=True)
    mount_mm(1536 if a.quick else 6144)
    print(f"# {subprocess.run(['memcached', '-V'], capture_output=True, text=True).stdout.strip()}, "
          f"{subprocess.run(['redis-server', '--version'], capture_output=True, text=True).stdout.split(' sha=')[0]}")
    # memcaslap's data set: each connection's window of keys, 1 KiB values
    mc_mib = conns * window * (1024 + 64) >> 20
    redis_mib = keys * 1000 >> 20
    try:
        for it in range(runs):
            # Each iteration starts with another side.
            order = SIDES[it % 3:] + SIDES[:it % 3]
            for mix in MIXES:
                for side in order:
                    v = f"{side}-{mix}"
                    print(f"csv,mmsrv,{v},{mc_mib},{it},tps,{memcached_sample(side, mix, ops, conns, window)}",
                          flush=True)
            for side in order:
                v = f"{side}-redis"
                fork_usec, ms, written = redis_sample(side, keys)
                print(f"csv,mmsrv,{v},{redis_mib},{it},fork_usec,{fork_usec}")
                print(f"csv,mmsrv,{v},{redis_mib},{it},bgsave_ms,{ms:.1f}")
                print(f"# {v}: {written} commands from the writer during the save", flush=True)
    finally:
        subprocess.run(["umount", "-l", MMDIR], stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
