import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { describe, test } from 'node:test'
import { call } from './helpers/api-client.ts'
import { browserSuiteOptions, launchChromium, watchPage } from './helpers/browser.ts'
import { startTestServer } from './helpers/test-server.ts'

const SCREENSHOT = 'artifacts/docs-page.png'
const OPERATIONS = ['listPets', 'createPet', 'getPet']

describe('docs page in a real browser', browserSuiteOptions(), () => {
  test('when a user reads /docs and tries listPets with a key, then the page works offline and shows the pets', async (t) => {
    const browser = await launchChromium(t)
    const server = await startTestServer(t)
    for (const name of ['Biscuit', 'Pepper']) {
      const created = await call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })
      assert.equal(created.status, 201)
    }
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    page.setDefaultTimeout(10_000)
    const watched = await watchPage(page, server.origin)

    try {
      await page.goto(`${server.origin}/docs`)
      // Swagger UI gives each operation block the id operations-<tag>-<operationId>.
      const operation = (id: string) => page.locator(`#operations-pets-${id}`)
      for (const id of OPERATIONS) await operation(id).waitFor()
      assert.equal(await page.locator('.opblock').count(), OPERATIONS.length)

      // A deprecated operation's block carries this class (struck-through path, greyed out).
      const getPet = operation('getPet')
      assert.match((await getPet.getAttribute('class')) ?? '', /\bopblock-deprecated\b/)
      for (const id of ['listPets', 'createPet'])
        assert.doesNotMatch((await operation(id).getAttribute('class')) ?? '', /\bopblock-deprecated\b/)
      await getPet.locator('.opblock-summary-control').click()
      await getPet.getByText('5 December 2030').first().waitFor()

      await page.locator('.scheme-container button.authorize').click()
      const dialog = page.locator('.modal-ux')
      await dialog.locator('input').fill(server.key)
      await dialog.locator('button.authorize').click()
      await dialog.locator('button.btn-done').click()

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
    } catch (error) {
      // A step that timed out says little by itself: what the page complained about says why.
      throw new Error(`${(error as Error).message}\npage problems: ${watched.problems.join('\n')}`, {
        cause: error,
      })
    } finally {
      mkdirSync('artifacts', { recursive: true })
      await page.screenshot({ path: SCREENSHOT, fullPage: true })
    }
    assert.deepEqual(watched.offsite, [], 'every request stays on the service')
    assert.deepEqual(watched.problems, [])
  })
})
