import Type from 'typebox'
import { ERROR_CODES, MESSAGE_MAX_LENGTH } from '../errors.ts'

/** The rows of the error codes' table (status, code, when), for this description and the README. */
export function errorCodeRows(): string[] {
  return Object.entries(ERROR_CODES).map(
    ([code, { status, summary }]) => `| ${status} | \`${code}\` | ${summary} |`,
  )
}

const errorCodeTable = errorCodeRows().join('\n')

// The table of codes lives here, with the schema it explains, rather than in the document's introduction:
// the reference then opens on the operations, and the table is one click away (Schemas → Error).
const DESCRIPTION = `The body of every error response (fields may be added in /v1: ignore those you do not know).
\`code\` is one of these stable identifiers (new ones may be added; existing ones never change meaning):

| Status | Code | Meaning |
| --- | --- | --- |
${errorCodeTable}`

export const ErrorSchema = Type.Object(
  {
    code: Type.Enum(Object.keys(ERROR_CODES), {
      type: 'string',
      description: 'Machine-readable, stable error code (see the table in the Error schema).',
    }),
    message: Type.String({
      maxLength: MESSAGE_MAX_LENGTH,
      description: 'Human-readable description naming the offending field and rule.',
    }),
    status: Type.Integer({
      minimum: 400,
      maximum: 599,
      format: 'int32',
      description: 'The HTTP status code of the response.',
    }),
  },
  // Open, as every response body: new response fields are additive (docs/versioning.md).
  { $id: 'Error', description: DESCRIPTION },
)
