/**
 * The README's configuration and error-code tables, generated from their single sources (the config
 * schema and ERROR_CODES). `npm run readme:tables` prints them; a test fails when the README differs.
 */
import { ConfigSchema } from '../src/config-schema.ts'
import { errorCodeRows } from '../src/schemas/error.ts'

interface SettingSchema {
  type?: string
  default?: unknown
  minimum?: number
  maximum?: number
  enum?: string[]
  allowedForm?: string
  description?: string
}

function allowed(schema: SettingSchema): string {
  if (schema.enum) return schema.enum.join(', ')
  if (schema.type === 'integer') return `${schema.minimum} to ${schema.maximum}`
  return schema.allowedForm ?? 'text'
}

export function configTable(): string {
  const rows = Object.entries(ConfigSchema.properties as unknown as Record<string, SettingSchema>).map(
    ([name, schema]) => {
      const fallback = schema.default === undefined || schema.default === '' ? '—' : `\`${schema.default}\``
      return `| \`${name}\` | ${fallback} | ${allowed(schema)} | ${schema.description ?? ''} |`
    },
  )
  return ['| Variable | Default | Allowed | Meaning |', '| --- | --- | --- | --- |', ...rows].join('\n')
}

export function errorCodeTable(): string {
  return ['| Status | Code | When |', '| --- | --- | --- |', ...errorCodeRows()].join('\n')
}

if (import.meta.main) {
  process.stdout.write(`${configTable()}\n\n${errorCodeTable()}\n`)
}
