import { existsSync } from 'node:fs'
import { type Browser, chromium, type Locator, type Page } from 'playwright-core'
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

/**
 * How readable an element's text is: its WCAG 2 contrast ratio against the backgrounds painted behind it
 * (from the root down, over white), and the opacity it is drawn with (below 1, it fades into the page).
 */
export function textContrast(locator: Locator): Promise<{ ratio: number; opacity: number }> {
  // Runs in the page; the project's TypeScript has no DOM types, so the little it uses is declared here.
  type Node = { parentElement: Node | null }
  type Style = { color: string; backgroundColor: string; opacity: string }
  return locator.evaluate((element: Node) => {
    const styleOf = (node: Node) =>
      (globalThis as unknown as { getComputedStyle(node: Node): Style }).getComputedStyle(node)
    type Color = { r: number; g: number; b: number; a: number }
    const parse = (css: string): Color => {
      const [r = 0, g = 0, b = 0, a = 1] = (css.match(/[\d.]+/g) ?? []).map(Number)
      return { r, g, b, a }
    }
    const over = (top: Color, bottom: Color): Color => ({
      r: top.r * top.a + bottom.r * (1 - top.a),
      g: top.g * top.a + bottom.g * (1 - top.a),
      b: top.b * top.a + bottom.b * (1 - top.a),
      a: 1,
    })
    const luminance = ({ r, g, b }: Color) => {
      const [lr = 0, lg = 0, lb = 0] = [r, g, b].map((v) => {
        const c = v / 255
        return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
      })
      return 0.2126 * lr + 0.7152 * lg + 0.0722 * lb
    }
    const chain: Node[] = []
    for (let node: Node | null = element; node; node = node.parentElement) chain.unshift(node)
    let background: Color = { r: 255, g: 255, b: 255, a: 1 }
    let opacity = 1
    for (const node of chain) {
      const style = styleOf(node)
      background = over(parse(style.backgroundColor), background)
      opacity *= Number(style.opacity)
    }
    const text = over(parse(styleOf(element).color), background)
    const [light = 0, dark = 0] = [luminance(text), luminance(background)].sort((x, y) => y - x)
    return { ratio: (light + 0.05) / (dark + 0.05), opacity }
  })
}
