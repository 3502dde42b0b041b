import { existsSync } from 'node:fs'
import { type Browser, chromium, type Page } from 'playwright-core'
import type { Cleanup } from './cleanup.ts'
import { suiteNeeding } from './suite-requirements.ts'

/** Debian's `chromium` package (what `.ci/run` installs); playwright-core downloads no browser of its own. */
export const CHROMIUM_PATH = '/usr/bin/chromium'

// Headless, and quiet: no update checks, sync or other background traffic that would count as the page's.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
]

/** `describe` options: skipped with one line when Chromium is missing, except under CI, where that fails. */
export function browserSuiteOptions(): { skip?: string } {
  return suiteNeeding(
    'the browser suites',
    existsSync(CHROMIUM_PATH)
      ? undefined
      : { missing: `no Chromium at ${CHROMIUM_PATH}`, remedy: 'apt-get install chromium' },
  )
}

/**
 * A headless Chromium, closed after the test. Cleanups run in the order they were registered: launch it
 * before starting the server, so the browser goes first and leaves no connection to the closing app.
 */
export async function launchChromium(t: Cleanup): Promise<Browser> {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS })
  t.after(() => browser.close())
  return browser
}

export interface PageProblems {
  /** Console errors, uncaught exceptions, failed requests and answers ≥ 400, one line each. */
  problems: string[]
  /** Requests to any origin but `origin`, which were refused before leaving the browser. */
  offsite: string[]
}

/**
 * Records everything that went wrong on `page`, and refuses every request to another origin (as if there
 * were no internet): a page that needs a CDN then fails visibly instead of passing on a networked machine.
 */
export async function watchPage(page: Page, origin: string): Promise<PageProblems> {
  const watched: PageProblems = { problems: [], offsite: [] }
  await page.route('**/*', (route) => {
    const url = route.request().url()
    if (new URL(url).origin === origin) return route.continue()
    watched.offsite.push(url)
    return route.abort('blockedbyclient')
  })
  page.on('console', (message) => {
    if (message.type() === 'error') watched.problems.push(`console: ${message.text()}`)
  })
  page.on('pageerror', (error) => watched.problems.push(`page error: ${error.message}`))
  page.on('requestfailed', (request) =>
    watched.problems.push(`failed: ${request.url()} (${request.failure()?.errorText})`),
  )
  page.on('response', (response) => {
    if (response.status() >= 400) watched.problems.push(`${response.status()}: ${response.url()}`)
  })
  return watched
}
