// The CRD lists the built-in check kinds only (PLUGINS.md, check providers): the check fields, the
// exactly-one rule and the status's kind enum must name the same kinds as the built-in providers.
import { CheckProgress, VerificationCheck } from '@kpromo/api';
import { describe, expect, it } from 'vitest';
import { BUILTIN_CHECK_PROVIDERS } from '../../src/verification/providers/index.js';

const builtins = BUILTIN_CHECK_PROVIDERS.map((p) => p.kind);

describe('the CRD lists the built-in check kinds', () => {
  it('as the fields of a check beside its name', () => {
    expect(Object.keys(VerificationCheck.properties).filter((k) => k !== 'name')).toEqual(builtins);
  });

  it('in the exactly-one rule and its message', () => {
    const [rule] = (
      VerificationCheck as unknown as { 'x-kubernetes-validations': Array<{ rule: string; message: string }> }
    )['x-kubernetes-validations'];
    expect([...rule!.rule.matchAll(/has\(self\.([a-z]+)\)/g)].map((m) => m[1])).toEqual(builtins);
    for (const k of builtins) expect(rule!.message).toContain(k);
  });

  it("as the status's kind of a check", () => {
    const kind = CheckProgress.properties.kind as unknown as { enum?: string[]; anyOf?: Array<{ const: string }> };
    expect(kind.enum ?? kind.anyOf?.map((x) => x.const)).toEqual(builtins);
  });
});
