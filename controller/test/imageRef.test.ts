import { dg } from '@kpromo/test-harness/objects';
import { describe, expect, it } from 'vitest';
import { formatImageRef, parseImageRef } from '../src/util/imageRef.js';

describe('image references', () => {
  it('parses image references with registry ports, tags and digests', () => {
    expect(parseImageRef(`127.0.0.1:5000/shop/cart:v1.2.0@${dg('a')}`)).toEqual({
      host: '127.0.0.1:5000',
      repository: 'shop/cart',
      tag: 'v1.2.0',
      digest: dg('a'),
    });
    expect(parseImageRef('nginx:1.27')).toEqual({
      host: undefined,
      repository: 'nginx',
      tag: '1.27',
      digest: undefined,
    });
    expect(parseImageRef('localhost:5000/app')).toMatchObject({
      host: 'localhost:5000',
      repository: 'app',
      tag: undefined,
    });
    expect(formatImageRef({ host: 'r.io', repository: 'a/b', tag: 't', digest: dg('c') })).toBe(
      `r.io/a/b:t@${dg('c')}`,
    );
  });
});
