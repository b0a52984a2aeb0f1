import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ADMISSION_POLICIES } from '../../src/doctor/admission.js';

describe('kpromo doctor: the admission policies it looks for', () => {
  it('are exactly the ValidatingAdmissionPolicies examples/deploy/admission-policy.yaml ships', () => {
    const file = fileURLToPath(new URL('../../../examples/deploy/admission-policy.yaml', import.meta.url));
    const names = parseAllDocuments(readFileSync(file, 'utf8'))
      .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string } })
      .filter((d) => d?.kind === 'ValidatingAdmissionPolicy')
      .map((d) => d.metadata?.name);
    expect(names.sort()).toEqual(ADMISSION_POLICIES.map((p) => `kpromo-${p.suffix}`).sort());
  });
});
