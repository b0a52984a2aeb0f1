import { expect, it } from 'vitest';

it('passes but leaves an unhandled rejection behind', async () => {
  void Promise.reject(new Error('nobody awaited me'));
  await new Promise((r) => setTimeout(r, 20));
  expect(true).toBe(true);
});
