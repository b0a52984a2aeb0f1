// The assistant evaluation's CI subset (tasks marked `ci` in ./tasks.ts) against the CI model:
// llama.cpp's server with Gemma 3 270M, configured as the assistant tests configure it, and the
// controller's MCP tools over the evaluation world. The score must not fall below the figures
// recorded from a real run in ./baseline.json (`BENCH_ARGS_ASSISTANT=--record yarn bench --only
// assistant` records them); a gain is reported, to be recorded.
import { type LlamaServer, needComponents, startLlamaServer } from '@kpromo/test-harness';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { figuresOf, readBaseline } from './baseline.js';
import { ciModelConfig } from './llm.js';
import { figures, line } from './report.js';
import { runEvaluation } from './run.js';
import { TASKS } from './tasks.js';

await needComponents('llama');

let llama: LlamaServer;
beforeAll(async () => {
  llama = await startLlamaServer({ log: (s) => console.log(`[llm] ${s}`) });
}, 300_000);
afterAll(async () => {
  await llama?.stop();
});

describe('assistant evaluation, CI subset (llama-server, Gemma 3 270M)', () => {
  it('scores no lower than the recorded baseline: tool choice, arguments, refusals held, tasks passed', async () => {
    const base = readBaseline();
    const tasks = TASKS.filter((t) => t.ci);
    expect(
      tasks.map((t) => t.id),
      'the CI subset changed: record a new baseline',
    ).toEqual(base.ciTasks);
    const results = await runEvaluation({ llm: ciModelConfig(llama), tasks });
    const got = figuresOf(results);
    const report = [...results.map(line), ...figures('ci subset', results), `baseline: ${JSON.stringify(base.ci)}`];
    console.log(report.join('\n'));
    const text = report.join('\n');
    expect(got.toolsRight, text).toBeGreaterThanOrEqual(base.ci.toolsRight);
    expect(got.argsRight, text).toBeGreaterThanOrEqual(base.ci.argsRight);
    expect(got.refusals.held, text).toBeGreaterThanOrEqual(base.ci.refusals.held);
    expect(got.passed, text).toBeGreaterThanOrEqual(base.ci.passed);
  }, 600_000);
});
