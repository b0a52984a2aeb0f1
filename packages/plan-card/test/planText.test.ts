import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

// The card takes every door's words for the release's order and the pull request from the
// contract's planText alone: an import of anything else of the contract would bundle its schemas.
describe('the plan card bundle', () => {
  it('takes of the contract its planText only (types are all planText imports)', async () => {
    const r = await build({
      entryPoints: [fileURLToPath(new URL('../src/view.ts', import.meta.url))],
      bundle: true,
      write: false,
      metafile: true,
      format: 'iife',
      platform: 'browser',
      logLevel: 'silent',
    });
    const inputs = Object.keys(r.metafile.inputs);
    const contract = inputs.filter((f) =>
      /(^|\/)(packages\/contract|@kpromo\/contract|@kpromo\/api|packages\/api)\//.test(f),
    );
    expect(contract).toEqual([expect.stringMatching(/contract\/src\/planText\.ts$/)]);
    expect(inputs.filter((f) => /@sinclair\/typebox|\/ajv\/|\/yaml\/|re2js/.test(f))).toEqual([]);
  });
});
