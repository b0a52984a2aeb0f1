"""llama.cpp's OpenAI-compatible server (its own server code and HTTP listener), run from the
prebuilt PyPI wheel xllamacpp, which embeds it: the flags llama-server takes that the tests use,
mapped onto llama.cpp's common_params. Runs until SIGTERM or SIGINT. test/llm/install.sh installs
this beside the wheel as `llama-server`."""

import argparse
import os
import signal

import xllamacpp as xlc

ap = argparse.ArgumentParser(prog="llama-server")
ap.add_argument("--model", required=True)
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--port", type=int, default=8080)
ap.add_argument("--jinja", action="store_true")
ap.add_argument("--chat-template-file")
ap.add_argument("--ctx-size", type=int, default=4096)
ap.add_argument("--parallel", type=int, default=1)
ap.add_argument("--threads", type=int, default=-1)
ap.add_argument("--api-key", action="append", default=[])
ap.add_argument("--no-webui", action="store_true")
ap.add_argument("--alias")
a = ap.parse_args()

p = xlc.CommonParams()
p.model.path = a.model
p.hostnames = [a.host]
p.port = a.port
p.use_jinja = a.jinja
if a.chat_template_file:
    with open(a.chat_template_file, encoding="utf-8") as f:
        p.chat_template = f.read()
p.n_ctx = a.ctx_size
p.n_parallel = a.parallel
p.cpuparams.n_threads = a.threads
p.cpuparams_batch.n_threads = a.threads
p.api_keys = a.api_key
p.ui = not a.no_webui
if a.alias:
    p.model_alias = {a.alias}

# Blocks the signals before the server's threads start, so that they all inherit the mask and the
# main thread alone takes them.
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
server = xlc.Server(p)
print(f"serve.py: llama.cpp server listening on {server.listening_address}", flush=True)
signal.sigwait([signal.SIGTERM, signal.SIGINT])
# The server's threads hold the model; nothing is left to flush.
os._exit(0)
