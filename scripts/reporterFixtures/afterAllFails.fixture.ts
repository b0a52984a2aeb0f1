import { afterAll, expect, it } from 'vitest';

afterAll(() => {
  throw new Error('cleanup failed');
});
it('passes on its own', () => expect(1).toBe(1));
