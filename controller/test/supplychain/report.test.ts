import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RegistryClient } from '../../src/oci/registryClient.js';
import { verifyImage } from '../../src/supplychain/report.js';

const key = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey;

describe('verifyImage', () => {
  it('refuses a promotion key and a signature key under one name before reading the registry (the name decides a statement role)', async () => {
    // No registry: the refusal must come before any request.
    const client = {} as RegistryClient;
    await expect(
      verifyImage(client, 'r', 'v1', [{ name: 'cosign.pub', key: key() }], [{ name: 'cosign.pub', key: key() }]),
    ).rejects.toThrow('two keys are both named "cosign.pub"');
  });
});
