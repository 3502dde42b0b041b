import { readFileSync } from 'node:fs'

/** The node flags `npm start` gives the service: the image's entry point and the systemd unit give the same. */
export function npmStartNodeFlags(): string[] {
  const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'))
  return (packageJson.scripts.start as string).split(' ').filter((word) => word.startsWith('--'))
}
