// The package's `petstore/client` entry point: a typed client for the three operations.
export {
  type ClientOptions,
  createClient,
  type ListPetsQuery,
  type NewPet,
  type Pet,
  type PetPage,
  type PetStatus,
  type PetStoreClient,
} from './create-client.ts'
export { type ErrorBody, type ErrorCode, PetStoreError } from './pet-store-error.ts'
