// The Markdown the docs tests read (test/docsCli.test.ts, test/docsConfig.test.ts): which files are
// the docs, and their code, fenced blocks and inline spans, each with the line it starts on.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './cluster/paths.js';

/**
 * Put on the line of an inline code span, or on the line just before a fenced block, to say that
 * the code there is deliberately wrong (a command that does not exist, shown as such): the docs
 * tests skip it. Nothing else exempts a doc's code from them.
 */
export const WRONG_EXAMPLE = '<!-- wrong example -->';

/** Every README.md below `dir`, skipping dependencies and build output. */
function readmes(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    if (e.isDirectory()) return ['node_modules', 'dist', '.cache'].includes(e.name) ? [] : readmes(`${dir}/${e.name}`);
    return e.name === 'README.md' ? [`${dir}/${e.name}`] : [];
  });
}

/** The docs: the READMEs, CONTRIBUTING.md, docs/*.md, and the READMEs of the packages and examples. */
export const DOC_FILES: readonly string[] = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
  ...['examples', 'controller', 'cli', 'exporter', 'plugins', 'packages'].flatMap(readmes).sort(),
];

export interface Fence {
  file: string;
  /** 1-based line of the first line inside the fence. */
  line: number;
  /** The info string's first word (`sh`, `yaml`, …; '' when none). */
  lang: string;
  lines: string[];
  /** The line before the opening fence carries WRONG_EXAMPLE. */
  wrong: boolean;
}

export interface Span {
  file: string;
  line: number;
  /** The span's text, line breaks inside it made spaces. */
  text: string;
  /** Its (first) line carries WRONG_EXAMPLE. */
  wrong: boolean;
}

export interface Markdown {
  fences: Fence[];
  spans: Span[];
}

/** Fenced blocks (``` or ~~~, any indentation) and the inline code spans of the text around them. */
export function readMarkdown(file: string, text = readFileSync(join(REPO_ROOT, file), 'utf8')): Markdown {
  const lines = text.split('\n');
  const fences: Fence[] = [];
  // Prose keeps its line structure, fenced lines are blanked, so spans get their line numbers.
  const prose: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]);
    if (!open) {
      prose.push(lines[i]);
      continue;
    }
    const marker = open[2];
    const start = i;
    const body: string[] = [];
    prose.push('');
    for (i++; i < lines.length && !lines[i].trim().startsWith(marker); i++) {
      body.push(lines[i].slice(Math.min(open[1].length, lines[i].length - lines[i].trimStart().length)));
      prose.push('');
    }
    prose.push('');
    fences.push({
      file,
      line: start + 2,
      lang: open[3].toLowerCase(),
      lines: body,
      wrong: (lines[start - 1] ?? '').includes(WRONG_EXAMPLE),
    });
  }
  const joined = prose.join('\n');
  const lineOf = (offset: number) => joined.slice(0, offset).split('\n').length;
  const spans: Span[] = [];
  // A span never crosses a paragraph's end (a blank line): look for them paragraph by paragraph.
  for (const p of joined.matchAll(/(?:[^\n]*\S[^\n]*(?:\n|$))+/g))
    for (const m of p[0].matchAll(/(`+)([^`]+?)\1(?!`)/g)) {
      const line = lineOf(p.index + m.index);
      spans.push({
        file,
        line,
        text: m[2].replace(/\s*\n\s*/g, ' ').trim(),
        wrong: prose[line - 1].includes(WRONG_EXAMPLE),
      });
    }
  return { fences, spans };
}

/**
 * The simple commands of a shell line, as word lists: quotes removed, comments, redirections and
 * their targets dropped, split at `&&`, `||`, `|`, `;`, `&` and (not in prose, where parentheses
 * are prose) at `(`, `)` and `$(`.
 */
export function shellCommands(line: string, { prose = false } = {}): string[][] {
  const commands: string[][] = [];
  let words: string[] = [];
  let word: string | undefined;
  let redirected = false; // the next word is a redirection's target
  const endWord = () => {
    if (word !== undefined && !redirected) words.push(word);
    else if (word !== undefined) redirected = false;
    word = undefined;
  };
  const endCommand = () => {
    endWord();
    if (words.length) commands.push(words);
    words = [];
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      const end = close < 0 ? line.length : close;
      word = (word ?? '') + line.slice(i + 1, end);
      i = end;
    } else if (/\s/.test(c)) endWord();
    else if (c === '#' && word === undefined) break;
    else if (c === '>' || c === '<') {
      if (word !== undefined && /^[0-9]+$/.test(word)) word = undefined; // 2>
      endWord();
      while (line[i + 1] === '>' || line[i + 1] === '&') i++;
      redirected = true;
    } else if (c === '$' && line[i + 1] === '(' && !prose) {
      endCommand();
      i++;
    } else if ('|&;'.includes(c) || ('()'.includes(c) && !prose)) endCommand();
    else word = (word ?? '') + c;
  }
  endCommand();
  return commands;
}

export interface ShellSource {
  line: number;
  text: string;
  /** An inline span (prose around it: parentheses are not subshells, `\\|` is a table's pipe). */
  prose: boolean;
}

const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'zsh', 'console', '']);

/**
 * Where a doc may show shell commands: its inline spans, and the lines of its shell blocks (sh, bash,
 * shell, zsh, untyped; in console blocks only the `$ ` lines), a trailing backslash joining the next.
 */
export function shellSources(md: Markdown): ShellSource[] {
  const out: ShellSource[] = md.spans.filter((s) => !s.wrong).map((s) => ({ line: s.line, text: s.text, prose: true }));
  for (const fence of md.fences) {
    if (fence.wrong || !SHELL_LANGS.has(fence.lang)) continue;
    for (let i = 0; i < fence.lines.length; i++) {
      const start = i;
      let text = fence.lines[i];
      if (fence.lang === 'console') {
        if (!text.startsWith('$ ')) continue;
        text = text.slice(2);
      }
      while (/\\\s*$/.test(text) && i + 1 < fence.lines.length)
        text = `${text.replace(/\\\s*$/, ' ')}${fence.lines[++i]}`;
      out.push({ line: fence.line + start, text, prose: false });
    }
  }
  return out.sort((a, b) => a.line - b.line);
}
