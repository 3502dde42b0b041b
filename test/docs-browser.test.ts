import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { describe, test } from 'node:test'
import type { Browser, Locator, Page } from 'playwright-core'
import { call } from './helpers/api-client.ts'
import {
  browserSuiteOptions,
  launchChromium,
  type PageProblems,
  textContrast,
  watchPage,
} from './helpers/browser.ts'
import { startTestServer, type TestServer } from './helpers/test-server.ts'

const ARTIFACTS = 'artifacts'
const OPERATIONS = ['listPets', 'createPet', 'getPet']
// What a laptop's browser window shows without scrolling.
const VIEWPORT = { width: 1280, height: 900 }
// WCAG 2 AA for normal text.
const READABLE_CONTRAST = 4.5

interface DocsPage {
  page: Page
  watched: PageProblems
  /** An operation's block: Swagger UI gives it the id operations-<tag>-<operationId>. */
  operation(id: string): Locator
}

async function openDocs(browser: Browser, server: TestServer) {
  const page = await browser.newPage({ viewport: VIEWPORT })
  page.setDefaultTimeout(10_000)
  const watched = await watchPage(page, server.origin)
  await page.goto(`${server.origin}/docs`)
  const operation = (id: string) => page.locator(`#operations-pets-${id}`)
  for (const id of OPERATIONS) await operation(id).waitFor()
  return { page, watched, operation } satisfies DocsPage
}

/** Runs the steps; a step that timed out says little by itself, so what the page complained about is added. */
async function onPage(docs: DocsPage, screenshot: () => Promise<unknown>, steps: () => Promise<void>) {
  try {
    await steps()
  } catch (error) {
    throw new Error(`${(error as Error).message}\npage problems: ${docs.watched.problems.join('\n')}`, {
      cause: error,
    })
  } finally {
    mkdirSync(ARTIFACTS, { recursive: true })
    await screenshot()
  }
  assert.deepEqual(docs.watched.offsite, [], 'every request stays on the service')
  assert.deepEqual(docs.watched.problems, [])
}

async function authorize(page: Page, key: string): Promise<void> {
  await page.locator('.scheme-container button.authorize').click()
  const dialog = page.locator('.modal-ux')
  await dialog.locator('input').fill(key)
  await dialog.locator('button.authorize').click()
  await dialog.locator('button.btn-done').click()
}

async function expand(operation: Locator): Promise<void> {
  await operation.locator('.opblock-summary-control').click()
  await operation.locator('.responses-wrapper').waitFor()
}

/** The example body Swagger UI shows for one documented response of an opened operation. */
async function exampleOf(operation: Locator, status: number): Promise<unknown> {
  const example = operation.locator(`tr.response[data-code="${status}"] .highlight-code`).first()
  return JSON.parse((await example.textContent()) ?? '')
}

describe('docs page in a real browser', browserSuiteOptions(), () => {
  test('when a user reads /docs and tries listPets with a key, then the page works offline and shows the pets', async (t) => {
    const browser = await launchChromium(t)
    const server = await startTestServer(t)
    for (const name of ['Biscuit', 'Pepper']) {
      const created = await call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })
      assert.equal(created.status, 201)
    }
    const docs = await openDocs(browser, server)
    const { page, operation } = docs
    const screenshot = () => page.screenshot({ path: `${ARTIFACTS}/docs-page.png`, fullPage: true })
    await onPage(docs, screenshot, async () => {
      assert.equal(await page.locator('.opblock').count(), OPERATIONS.length)
      await authorize(page, server.key)
      const listPets = operation('listPets')
      await listPets.locator('.opblock-summary-control').click()
      await listPets.locator('button.try-out__btn').click()
      await listPets.locator('button.execute').click()
      const live = listPets.locator('.live-responses-table')
      await live.locator('.response-col_status').getByText('200').waitFor()
      await live.getByText('Biscuit').first().waitFor()
      assert.match((await live.textContent()) ?? '', /Pepper/)
      // The call carried the pasted key, as the curl line Swagger UI shows for it says.
      assert.match(
        (await listPets.locator('.curl-command').textContent()) ?? '',
        /Authorization: Bearer psk_/,
      )
    })
  })

  test('when /docs opens in a 1280×900 window, then its first screen shows the title, Authorize and the three operations, getPet readable and marked deprecated until 5 December 2030', async (t) => {
    const browser = await launchChromium(t)
    const server = await startTestServer(t)
    const docs = await openDocs(browser, server)
    const { page, operation } = docs
    const screenshot = () => page.screenshot({ path: `${ARTIFACTS}/docs-first-screen.png` })
    await onPage(docs, screenshot, async () => {
      const firstScreen = {
        title: page.locator('.info .title'),
        authorize: page.locator('.scheme-container button.authorize'),
        ...Object.fromEntries(OPERATIONS.map((id) => [id, operation(id)])),
      }
      for (const [what, locator] of Object.entries(firstScreen)) {
        const box = await locator.boundingBox()
        assert.ok(box, `${what} is shown`)
        assert.ok(
          box.y >= 0 && box.y + box.height <= VIEWPORT.height,
          `${what} is on the first screen (${box.y})`,
        )
        assert.ok(box.x >= 0 && box.x + box.width <= VIEWPORT.width, `${what} fits the width`)
      }

      // A deprecated operation's block carries this class (grey, its path struck through).
      const getPet = operation('getPet')
      assert.match((await getPet.getAttribute('class')) ?? '', /\bopblock-deprecated\b/)
      for (const id of ['listPets', 'createPet'])
        assert.doesNotMatch((await operation(id).getAttribute('class')) ?? '', /\bopblock-deprecated\b/)
      const summary = getPet.locator('.opblock-summary-description')
      assert.match((await summary.textContent()) ?? '', /deprecated.*5 December 2030/)
      // Swagger UI draws a deprecated block at 60 % opacity, its method white on light grey: unreadable.
      for (const part of [summary, getPet.locator('.opblock-summary-method')]) {
        const { ratio, opacity } = await textContrast(part)
        assert.equal(opacity, 1, 'not faded')
        assert.ok(ratio >= READABLE_CONTRAST, `contrast ${ratio.toFixed(2)}:1`)
      }
    })
  })

  test("when an operation is opened, then each error response's example shows its own code and status", async (t) => {
    const browser = await launchChromium(t)
    const server = await startTestServer(t)
    const docs = await openDocs(browser, server)
    const { page, operation } = docs
    const screenshot = () => page.screenshot({ path: `${ARTIFACTS}/docs-error-examples.png`, fullPage: true })
    await onPage(docs, screenshot, async () => {
      await expand(operation('getPet'))
      assert.deepEqual(await exampleOf(operation('getPet'), 404), {
        code: 'pet_not_found',
        message: 'No pet has the requested id.',
        status: 404,
      })
      await expand(operation('listPets'))
      assert.deepEqual(await exampleOf(operation('listPets'), 429), {
        code: 'rate_limited',
        message: 'Too many requests for this API key; see Retry-After.',
        status: 429,
      })
      assert.deepEqual(await exampleOf(operation('listPets'), 401), {
        code: 'unauthorized',
        message: 'The bearer API key is missing, malformed, unknown or revoked.',
        status: 401,
      })
    })
  })

  test('when a pet is created with Try it out, then the editor starts from a realistic pet and the response shows the exact text received', async (t) => {
    const browser = await launchChromium(t)
    const server = await startTestServer(t)
    const docs = await openDocs(browser, server)
    const { page, operation } = docs
    const createPet = operation('createPet')
    // The answer as shown, or the whole operation when the call did not get that far.
    const live = createPet.locator('.live-responses-table')
    const screenshot = async () => {
      const shot = (await live.count()) > 0 ? live : createPet
      await shot.screenshot({ path: `${ARTIFACTS}/docs-exact-body.png` })
    }
    await onPage(docs, screenshot, async () => {
      await authorize(page, server.key)
      await expand(createPet)
      await createPet.locator('button.try-out__btn').click()
      const editor = createPet.locator('textarea.body-param__text')
      assert.deepEqual(JSON.parse(await editor.inputValue()), {
        name: 'Rex',
        categoryId: 1,
        status: 'available',
      })

      // Above 2^53, where JSON.parse rounds (…993 would read …992); a name full of JSON's own punctuation.
      await editor.fill('{"name":"Rex\\"{[,:]}\\\\","categoryId":9007199254740993,"status":"available"}')
      const answer = page.waitForResponse(
        (r) => r.request().method() === 'POST' && r.url().endsWith('/v1/pets'),
      )
      await createPet.locator('button.execute').click()
      const received = await (await answer).text()
      assert.match(received, /"categoryId":9007199254740993\b/)
      await live.locator('.response-col_status').getByText('201').waitFor()
      const body = live.locator('xpath=.//h5[text()="Response body"]/following-sibling::*[1]').locator('pre')
      const shown = (await body.first().textContent()) ?? ''
      assert.match(shown, /"categoryId": 9007199254740993\b/)
      // The very text received, only re-indented: no value re-printed.
      assert.equal(shown.replace(/\s+/g, ''), received)
    })
  })
})
