import type { ChildProcess } from 'node:child_process';

/** The origin a bench child process prints on its first line of stdout once it listens (the fake, the floors). */
export function printedOrigin(child: ChildProcess): Promise<string> {
  return new Promise<string>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(String(d).trim())));
}
