import { readFileSync } from 'node:fs';

/** Peak RSS (VmHWM, MiB) and CPU seconds (user + system) of a process, from /proc (Linux). */
export function procUsage(pid: number): { rssMiB: number; cpuSeconds: number } {
  const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime (fields 14 and 15 of stat) in clock ticks; Linux's USER_HZ is 100.
  return { rssMiB: Number(hwm) / 1024, cpuSeconds: (Number(fields[11]) + Number(fields[12])) / 100 };
}
