// The entry point of `@petstore/client`: a typed client for the Pet Store API's three operations.
export {
  type CallOptions,
  type ClientOptions,
  createClient,
  DEFAULT_TIMEOUT_MS,
  type Fetch,
  type ListPetsQuery,
  type NewPet,
  type Pet,
  type PetPage,
  type PetStatus,
  type PetStoreClient,
} from './create-client.ts'
export type { DeprecationListener, DeprecationNotice } from './deprecation-notice.ts'
export { type ErrorBody, type ErrorCode, type KnownErrorCode, PetStoreError } from './pet-store-error.ts'
