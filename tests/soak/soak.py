#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The soak of issue 28 (run through tests/soak/run.sh): PIPELINES pipelines
at once, over every storage, for MINUTES minutes, in one process:

  videotestsrc ! capsfilter ! jpegenc ! jpegdec ! tensorupload storage=S
    ! tee ! queue ! tensorconvert ! fakesink
          tee ! queue ! identity sleep-time (a slow consumer) ! tensordownload ! fakesink

(jpegdec decodes into tensorupload's proposed pool; storage=d3d11 takes RGBA,
so its chain converts after the decoder). Every few seconds one pipeline's
caps change size (renegotiation through the decoder and the pools), and one
pipeline goes through a state change (READY or NULL and back).

Each SAMPLE seconds it records the process's RSS (and its anonymous, file
and shared-memory parts) after malloc_trim(0) has handed the malloc arenas'
free pages back to the kernel (RSS before it is shown too; run.sh also caps
the arenas with MALLOC_ARENA_MAX=2), the bytes malloc has handed out and not
got back ("heap", glibc's mallinfo2: a leak of anything malloc'd grows it,
the arenas' free caches do not) and holds free ("heap-free"), open fds,
threads,
the GL objects of gst-tensormem alive (PBOs, EGL fences:
gst_tensor_mem_get_gl_stats), the tensor buffer pools alive and the buffers
they have allocated (gst_tensor_mem_buffer_pool_get_live_stats), and the
pipelines' frame counts. A pipeline that stops moving or posts an error
fails the run.

Growth: the samples from WARMUP minutes on are split in thirds; the run fails
if the highest value of the last third exceeds the highest of the first
third by more than a slack: RSS and heap 10 % (--rss-slack, --heap-slack),
fds 2, threads 0, PBOs, fences, pools and pool buffers --count-slack (8:
twice what they were seen to move by while pipelines restart). Highest against
highest, so that a sample that happens to fall while a pipeline is
restarting is no growth, while anything that keeps growing is.

--plant-leak KB (kB a second, malloc'd and kept) and --plant-fd-leak N (fds a
minute, opened and kept) put a leak into the run on purpose, to show the
rule catches one (docs/testing.md, "Soak"). Prints one line per sample, a
table of them, and a closing 'N passed, N failed' line."""
import argparse
import ctypes
import os
import random
import sys
import time

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

STORAGES = ["system", "dmabuf", "pbo", "d3d11"]
SIZES = [(320, 240), (256, 192), (352, 288)]


class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


LIBC = ctypes.CDLL("libc.so.6")
LIBC.mallinfo2.restype = Mallinfo2


def heap_status():
    """glibc's malloc: bytes in use by the program (allocated chunks and
    mmapped blocks) and bytes held free in the arenas. In-use bytes grow
    with a leak of anything malloc'd; free bytes are the arenas' caches
    and fragmentation, which RSS also counts."""
    m = LIBC.mallinfo2()
    return (m.uordblks + m.hblkhd) // 1024, m.fordblks // 1024


def tensormem_counters():
    """The live-object counters of libgsttensormem (the plugin loaded the
    same library, so these are its counters): PBOs, EGL fences, pools and
    pool buffers."""
    lib = ctypes.CDLL("libgsttensormem-1.0.so.0")
    u64 = ctypes.c_uint64

    def read():
        pbos, fences, pools, buffers = u64(), u64(), u64(), u64()
        lib.gst_tensor_mem_get_gl_stats(ctypes.byref(pbos), ctypes.byref(fences))
        lib.gst_tensor_mem_buffer_pool_get_live_stats(ctypes.byref(pools), ctypes.byref(buffers))
        return {"pbos": pbos.value, "fences": fences.value, "pools": pools.value, "pool-buffers": buffers.value}
    return read


def proc_status():
    """RSS and its parts (anonymous, file-backed, shared memory: the memfd
    DMA-BUFs), all in kB, open fds, threads."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"):
                fields[key] = int(value.split()[0])
    return fields, len(os.listdir("/proc/self/fd"))


class Chain:
    def __init__(self, index, storage):
        self.index, self.storage = index, storage
        fmt = "RGBA" if storage == "d3d11" else "I420"
        after_decoder = "videoconvert ! video/x-raw,format=RGBA ! " if storage == "d3d11" else ""
        w, h = SIZES[0]
        # storage=reference: the same pipeline without our elements, to
        # tell GStreamer's behaviour under the churn from ours.
        ours = storage != "reference"
        upload = f"tensorupload storage={storage}" if ours else "identity"
        convert = "tensorconvert width=64 height=64" if ours else "videoscale ! video/x-raw,width=64,height=64"
        download = "tensordownload" if ours else "identity"
        self.pipeline = Gst.parse_launch(
            f"videotestsrc pattern=ball ! capsfilter name=caps caps=video/x-raw,format=I420,width={w},height={h},"
            f"framerate=60/1 ! jpegenc quality=60 ! jpegdec ! {after_decoder}{upload} "
            "! tee name=t "
            f"t. ! queue max-size-buffers=4 ! {convert} ! fakesink name=fast sync=false "
            f"t. ! queue max-size-buffers=4 ! identity sleep-time=20000 ! {download} "
            "! fakesink name=slow sync=false")
        self.fmt = fmt
        self.frames = 0
        self.last_frames = -1
        fast = self.pipeline.get_by_name("fast")
        fast.set_property("signal-handoffs", True)
        fast.connect("handoff", self.on_frame)
        bus = self.pipeline.get_bus()
        bus.add_signal_watch()
        bus.connect("message::error", self.on_error)
        self.errors = []
        self.actions = []  # what the churn did to this pipeline, newest last

    def on_frame(self, *args):
        self.frames += 1

    def on_error(self, bus, message):
        err, debug = message.parse_error()
        self.errors.append(f"pipeline {self.index} ({self.storage}): {err.message} ({debug})")

    def resize(self):
        w, h = random.choice(SIZES)
        caps = Gst.Caps.from_string(f"video/x-raw,format=I420,width={w},height={h},framerate=60/1")
        self.pipeline.get_by_name("caps").set_property("caps", caps)
        self.actions.append(f"caps {w}x{h} at frame {self.frames}")

    def cycle_state(self):
        # READY or NULL and back: a restart through the elements' stop and
        # start (and, for NULL, close). PAUSED and back is left out: this
        # non-live pipeline with a tee and a slow branch then stalls in
        # GStreamer 1.22 itself, our elements or not (storage=reference shows
        # it: the slow sink stays waiting for preroll in PLAYING).
        target = random.choice([Gst.State.READY, Gst.State.NULL])
        self.actions.append(f"{target.value_nick} and back at frame {self.frames}")
        for state in (target, Gst.State.PLAYING):
            if self.pipeline.set_state(state) == Gst.StateChangeReturn.FAILURE:
                self.errors.append(f"pipeline {self.index} ({self.storage}): set_state({state.value_nick}) failed")
            self.pipeline.get_state(5 * Gst.SECOND)


# What a sample holds, how each is shown, and the growth each may have:
# (name, unit, relative slack option or None, absolute slack option or number).
METRICS = [
    ("rss", "kB", "rss_slack", 0),
    ("heap", "kB", "heap_slack", 0),
    ("fds", "", None, 2),
    ("threads", "", None, 0),
    ("pbos", "", None, "count_slack"),
    ("fences", "", None, "count_slack"),
    ("pools", "", None, "count_slack"),
    ("pool-buffers", "", None, "count_slack"),
]


def check_growth(samples, args):
    """Failures for whatever grew after the warm-up (see the docstring)."""
    after = [s for s in samples if s["t"] >= args.warmup]
    if len(after) < 2:
        return [f"fewer than two samples after the {args.warmup} min warm-up: nothing to compare"]
    third = max(1, len(after) // 3)
    first, last = after[:third], after[-third:]
    failures = []
    for name, unit, rel, absolute in METRICS:
        early = max(s[name] for s in first)
        late = max(s[name] for s in last)
        slack = early * getattr(args, rel) if rel else 0
        slack += getattr(args, absolute) if isinstance(absolute, str) else absolute
        if late > early + slack:
            failures.append(f"{name} grew: highest {late}{unit and ' ' + unit} in minutes "
                            f"{last[0]['t']:.1f}-{last[-1]['t']:.1f}, against {early}{unit and ' ' + unit} in minutes "
                            f"{first[0]['t']:.1f}-{first[-1]['t']:.1f} (slack {slack:.0f})")
    return failures


def table(samples):
    """The samples as a Markdown table (for docs/testing.md)."""
    rows = ["| min | RSS MB | RSS before trim MB | anon MB | heap MB | heap free MB | fds | threads | PBOs | fences "
            "| pools | pool buffers | frames (all pipelines) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for s in samples:
        rows.append(f"| {s['t']:.1f} | {s['rss'] / 1024:.0f} | {s['rss-untrimmed'] / 1024:.0f} "
                    f"| {s['anon'] / 1024:.0f} | {s['heap'] / 1024:.1f} "
                    f"| {s['heap-free'] / 1024:.1f} | {s['fds']} | {s['threads']} | {s['pbos']} | {s['fences']} "
                    f"| {s['pools']} | {s['pool-buffers']} | {s['frames']} |")
    return "\n".join(rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--sample", type=float, default=60, help="seconds between samples")
    parser.add_argument("--pipelines", type=int, default=8)
    parser.add_argument("--rss-slack", type=float, default=0.10)
    parser.add_argument("--heap-slack", type=float, default=0.10)
    parser.add_argument("--count-slack", type=int, default=8)
    parser.add_argument("--storages", default=",".join(STORAGES), help="comma-separated, cycled over the pipelines")
    parser.add_argument("--plant-leak", type=float, default=0, metavar="KB",
                        help="leak KB kB a second on purpose (to show the rule catches it)")
    parser.add_argument("--plant-fd-leak", type=int, default=0, metavar="N",
                        help="leak N fds a minute on purpose (to show the rule catches it)")
    args = parser.parse_args()
    Gst.init(None)
    random.seed(28)
    counters = tensormem_counters()
    print(f"soak: {args.pipelines} pipelines over {args.storages} for {args.minutes} min, a sample each "
          f"{args.sample:.0f} s, warm-up {args.warmup} min; MALLOC_ARENA_MAX={os.environ.get('MALLOC_ARENA_MAX', 'unset')}"
          f"{f'; PLANTED LEAK {args.plant_leak} kB/s' if args.plant_leak else ''}"
          f"{f'; PLANTED FD LEAK {args.plant_fd_leak}/min' if args.plant_fd_leak else ''}", flush=True)
    storages = args.storages.split(",")
    chains = [Chain(i, storages[i % len(storages)]) for i in range(args.pipelines)]
    for c in chains:
        c.pipeline.set_state(Gst.State.PLAYING)
    loop = GLib.MainLoop()
    start = time.monotonic()
    samples = []
    failures = []
    planted = []

    def churn():
        random.choice(chains).resize()
        random.choice(chains).cycle_state()
        return True

    def plant_leak():
        # Distinct bytes objects of KB kB, touched, kept: malloc'd memory
        # nobody frees, as a leak in our code would be.
        planted.append(os.urandom(int(args.plant_leak * 1024)))
        return True

    def plant_fd_leak():
        planted.extend(os.open("/dev/null", os.O_RDONLY) for _ in range(args.plant_fd_leak))
        return True

    def sample():
        elapsed = (time.monotonic() - start) / 60
        untrimmed = proc_status()[0]["VmRSS"]
        heap, heap_free = heap_status()
        # The arenas' free pages go back to the kernel first, so that RSS
        # counts what the process uses, not what malloc keeps cached.
        LIBC.malloc_trim(0)
        status, fds = proc_status()
        s = {"t": elapsed, "rss": status["VmRSS"], "rss-untrimmed": untrimmed, "anon": status["RssAnon"],
             "heap": heap, "heap-free": heap_free,
             "fds": fds, "threads": status["Threads"], **counters(), "frames": sum(c.frames for c in chains)}
        samples.append(s)
        print(f"soak: t={elapsed:5.1f} min rss={s['rss']} kB (before malloc_trim {untrimmed}; anon {s['anon']}, "
              f"file {status['RssFile']}, "
              f"shmem {status['RssShmem']}) heap={heap} kB heap-free={heap_free} kB fds={fds} "
              f"threads={s['threads']} pbos={s['pbos']} fences={s['fences']} pools={s['pools']} "
              f"pool-buffers={s['pool-buffers']} frames={[c.frames for c in chains]}", flush=True)
        for c in chains:
            failures.extend(c.errors)
            c.errors.clear()
            if c.frames == c.last_frames:
                _, state, _ = c.pipeline.get_state(0)
                failures.append(f"pipeline {c.index} ({c.storage}) made no frame in {args.sample:.0f} s "
                                f"(state {state.value_nick}; last churn: {'; '.join(c.actions[-3:]) or 'none'})")
            c.last_frames = c.frames
        if failures and os.environ.get("SOAK_HOLD_ON_FAILURE"):
            # Leaves the process as it is for a debugger (gdb -p PID).
            print(f"soak: holding pid {os.getpid()} for {os.environ['SOAK_HOLD_ON_FAILURE']} s", flush=True)
            time.sleep(float(os.environ["SOAK_HOLD_ON_FAILURE"]))
        if elapsed >= args.minutes or failures:
            loop.quit()
            return False
        return True

    GLib.timeout_add(3000, churn)
    GLib.timeout_add(int(args.sample * 1000), sample)
    if args.plant_leak:
        GLib.timeout_add(1000, plant_leak)
    if args.plant_fd_leak:
        GLib.timeout_add(60000, plant_fd_leak)
    loop.run()
    for c in chains:
        c.pipeline.set_state(Gst.State.NULL)

    print(table(samples), flush=True)
    return failures or check_growth(samples, args)


if __name__ == "__main__":
    found = main()
    print("".join(f"soak: FAILED {f}\n" for f in found) + ("0 passed, 1 failed" if found else "1 passed, 0 failed"))
    sys.exit(1 if found else 0)
