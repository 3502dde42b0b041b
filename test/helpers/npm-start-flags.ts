import { readFileSync } from 'node:fs'

/** `npm start`'s command line, as package.json has it. */
export function npmStartScript(): string {
  const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
  return packageJson.scripts.start as string
}

/** The node flags a command line gives (its words that start with `--`). */
export function nodeFlagsOf(command: string): string[] {
  return command.split(' ').filter((word) => word.startsWith('--'))
}

/** The node flags `npm start` gives the service: the image's entry point and the systemd unit give the same. */
export function npmStartNodeFlags(): string[] {
  return nodeFlagsOf(npmStartScript())
}
