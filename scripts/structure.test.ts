import { describe, expect, it } from 'vitest';
import { isProduction, longFunctions } from './structure.js';

describe('structure figures (scripts/structure.ts)', () => {
  it.each([
    ['controller/src/api/promotions.ts', true],
    ['plugins/promotions/src/components/PlanView.tsx', true],
    ['controller/test/fleet.int.test.ts', false],
    ['plugins/promotions/src/components/PlanView.test.tsx', false],
    ['test/controller/e2e.ts', false],
    ['examples/portal/packages/app/src/e2e/portal.int.test.ts', false],
    ['packages/contract/src/generated/controllerApi.ts', false],
    ['bench/fleet.ts', false],
    ['packages/api/src/index.d.ts', false],
  ])('%s is production code: %s', (file, expected) => {
    expect(isProduction(file)).toBe(expected);
  });

  const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');

  it('measures a function from its first to its last line, nested ones on their own', () => {
    // f spans 1 + 3 + (1 + 2 + 1) + 1 = 9 lines; the arrow inside it 4.
    const source = `function f() {\n${body(3)}\n  const g = () => {\n${body(2)}\n  };\n}\n`;
    expect(longFunctions('a.ts', source, 3)).toEqual([
      { at: 'a.ts:1', lines: 9 },
      { at: 'a.ts:5', lines: 4 },
    ]);
    expect(longFunctions('a.ts', source, 9)).toEqual([]);
  });

  it('counts methods and leaves out declarations without a body', () => {
    const source = `class C {\n  m() {\n${body(5)}\n  }\n}\ndeclare function d(): void;\n`;
    expect(longFunctions('c.ts', source, 5)).toEqual([{ at: 'c.ts:2', lines: 7 }]);
  });
});
