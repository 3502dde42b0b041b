import Type, { type Static } from 'typebox'
import { ERROR_CODES } from '../errors.ts'

export const ErrorSchema = Type.Object(
  {
    code: Type.Enum(Object.keys(ERROR_CODES), {
      type: 'string',
      description: 'Machine-readable, stable error code (see the table in the API description).',
    }),
    message: Type.String({ description: 'Human-readable description naming the offending field and rule.' }),
    status: Type.Integer({
      minimum: 400,
      maximum: 599,
      description: 'The HTTP status code of the response.',
    }),
  },
  { $id: 'Error', additionalProperties: false, description: 'The body of every error response.' },
)
export type ErrorBody = Static<typeof ErrorSchema>
