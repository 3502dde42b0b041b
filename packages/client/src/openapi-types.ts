// Generated from the service's OpenAPI document by `npm run client:generate`: do not edit.
// Every int64 is a bigint (JavaScript numbers round above 2^53); the client parses and writes them exactly.
export interface paths {
    "/pets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List all animals
         * @description Animals in ascending id order, at most `limit` of them, optionally only those with `status`. When more follow, the `Link` header (RFC 8288) carries the URL of the next page (`rel="next"`); following it walks the whole catalogue without duplicates or gaps, even while pets are added. Each page costs the same however deep.
         */
        get: operations["listPets"];
        put?: never;
        /**
         * Add an animal
         * @description Stores the animal and returns it with the id the service assigned; `status` stays absent if absent. With an `Idempotency-Key`, a retry of the same request returns the first result instead of creating another pet.
         */
        post: operations["createPet"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/pets/{petId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an animal (deprecated: scheduled for removal on 5 December 2030)
         * @deprecated
         * @description Deprecated: scheduled for removal on 5 December 2030. Use `GET /pets` with a `status` filter instead. Every response carries `Deprecation`, `Sunset` and a `Link` to the successor; calls are counted per API key.
         */
        get: operations["getPet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description Availability of the animal in the store.
         * @enum {string}
         */
        PetStatus: "available" | "pending" | "sold";
        /**
         * @description An animal to add. Unknown properties (including `id`) are rejected.
         * @example {
         *       "name": "Rex",
         *       "categoryId": 1,
         *       "status": "available"
         *     }
         */
        NewPet: {
            /** @description The animal's name: 1 to 100 Unicode characters, at least one of them visible (not only spaces or invisible characters), no control characters (C0, DEL, C1). Stored exactly as sent (never trimmed). */
            name: string;
            /**
             * Format: int64
             * @description Identifier of the category the animal belongs to. An integer literal: `1.0`, `1e2`, `-0` and `01` are not int64 values here.
             */
            categoryId: bigint;
            status?: components["schemas"]["PetStatus"];
        };
        /**
         * @description An animal of the catalogue. Fields may be added in /v1: ignore those you do not know.
         * @example {
         *       "id": 1,
         *       "name": "Rex",
         *       "categoryId": 1,
         *       "status": "available"
         *     }
         */
        Pet: {
            /**
             * Format: int64
             * @description Unique identifier assigned by the service on creation. An integer literal: `1.0`, `1e2`, `-0` and `01` are not int64 values here.
             */
            id: bigint;
            /** @description The animal's name: 1 to 100 Unicode characters, at least one of them visible (not only spaces or invisible characters), no control characters (C0, DEL, C1). Stored exactly as sent (never trimmed). */
            name: string;
            /**
             * Format: int64
             * @description Identifier of the category the animal belongs to. An integer literal: `1.0`, `1e2`, `-0` and `01` are not int64 values here.
             */
            categoryId: bigint;
            status?: components["schemas"]["PetStatus"];
        };
        /** @description Animals, ordered by id. */
        Pets: components["schemas"]["Pet"][];
        /**
         * @description The body of every error response (fields may be added in /v1: ignore those you do not know).
         *     `code` is one of these stable identifiers (new ones may be added; existing ones never change meaning):
         *
         *     | Status | Code | Meaning |
         *     | --- | --- | --- |
         *     | 400 | `bad_request` | The request could not be read (malformed URL, bad header, bad framing). |
         *     | 400 | `malformed_json` | The request body is not valid JSON (or not UTF-8, or nested more than 64 levels). |
         *     | 400 | `invalid_body` | The body is missing or empty, or breaks the NewPet schema; the message names the field. |
         *     | 400 | `invalid_query` | A query parameter is unknown, repeated or out of range. |
         *     | 400 | `invalid_path_parameter` | A path parameter is not valid (petId must be an int64). |
         *     | 400 | `invalid_idempotency_key` | The Idempotency-Key header is malformed or repeated. |
         *     | 401 | `unauthorized` | The bearer API key is missing, malformed, unknown or revoked. |
         *     | 404 | `route_not_found` | No operation exists at this path; the message names the method and the path's first 200 characters, never its query. |
         *     | 404 | `pet_not_found` | No pet has the requested id. |
         *     | 405 | `method_not_allowed` | The path exists but not with this method; see Allow. |
         *     | 408 | `request_timeout` | The request was not received in time. |
         *     | 409 | `idempotency_key_in_flight` | A request with the same Idempotency-Key is still being processed; retry later. |
         *     | 410 | `gone` | The operation was removed after its sunset date. |
         *     | 413 | `body_too_large` | The request body is over the size limit. |
         *     | 414 | `uri_too_long` | The request target (path and query) is over 8 KiB. |
         *     | 415 | `unsupported_media_type` | The body is not UTF-8 application/json, or is content-encoded. |
         *     | 417 | `expectation_failed` | The Expect header asks for something other than 100-continue. |
         *     | 422 | `idempotency_key_reused` | The Idempotency-Key was already used with a different request body. |
         *     | 429 | `rate_limited` | Too many requests for this API key; see Retry-After. |
         *     | 431 | `headers_too_large` | The request line or headers are too large. |
         *     | 500 | `internal_error` | An unexpected failure; the detail is in the server log. |
         *     | 503 | `service_unavailable` | The service cannot answer now (store down, overload, shutdown). |
         *     | 507 | `pet_ids_exhausted` | Every pet id, up to the largest int64, has been given out: no pet can be added. |
         */
        Error: {
            /**
             * @description Machine-readable, stable error code (see the table in the Error schema).
             * @enum {string}
             */
            code: "bad_request" | "malformed_json" | "invalid_body" | "invalid_query" | "invalid_path_parameter" | "invalid_idempotency_key" | "unauthorized" | "route_not_found" | "pet_not_found" | "method_not_allowed" | "request_timeout" | "idempotency_key_in_flight" | "gone" | "body_too_large" | "uri_too_long" | "unsupported_media_type" | "expectation_failed" | "idempotency_key_reused" | "rate_limited" | "headers_too_large" | "internal_error" | "service_unavailable" | "pet_ids_exhausted";
            /** @description Human-readable description naming the offending field and rule. */
            message: string;
            /**
             * Format: int32
             * @description The HTTP status code of the response.
             */
            status: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    listPets: {
        parameters: {
            query?: {
                /** @description Maximum number of animals returned. */
                limit?: number;
                /** @description Availability of the animal in the store. */
                status?: components["schemas"]["PetStatus"];
                /** @description Where the page starts: copy it from the `Link: <…>; rel="next"` of the previous page. Opaque and signed; it must be sent with the same `status` as the page it came from. */
                cursor?: string;
            };
            header?: {
                /** @description The caller's own id for this request, echoed in the response's X-Request-Id and written in the service's log; one that is not 1 to 128 letters, digits or `._:-` (or holds a key) is replaced. */
                "x-request-id"?: string;
                /** @description An ETag this response had: 304 Not Modified, with no body, while it still holds. */
                "if-none-match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of animals. */
            200: {
                headers: {
                    /** @description The next page, present only when more pets follow. */
                    Link?: string;
                    /** @description Strong validator of this exact response; send it back in If-None-Match. */
                    ETag: string;
                    /** @description Clients may keep the response but must revalidate it. */
                    "Cache-Control": "private, no-cache";
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pets"];
                };
            };
            /** @description Not modified: the If-None-Match tag still holds. */
            304: {
                headers: {
                    /** @description The next page, present only when more pets follow. */
                    Link?: string;
                    /** @description Strong validator of this exact response; send it back in If-None-Match. */
                    ETag: string;
                    /** @description Clients may keep the response but must revalidate it. */
                    "Cache-Control": "private, no-cache";
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `bad_request`: The request could not be read (malformed URL, bad header, bad framing). `invalid_query`: A query parameter is unknown, repeated or out of range. */
            400: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthorized`: The bearer API key is missing, malformed, unknown or revoked. */
            401: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description The bearer challenge (RFC 6750). */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `request_timeout`: The request was not received in time. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: The request target (path and query) is over 8 KiB. */
            414: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `expectation_failed`: The Expect header asks for something other than 100-continue. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `rate_limited`: Too many requests for this API key; see Retry-After. */
            429: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit": string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining": string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset": string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Seconds until the limit resets. */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: The request line or headers are too large. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `internal_error`: An unexpected failure; the detail is in the server log. */
            500: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `service_unavailable`: The service cannot answer now (store down, overload, shutdown). */
            503: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Seconds to wait before retrying. */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createPet: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the create safe to retry: 1 to 255 printable ASCII characters, bare (no space, not opening with `"`) or as a quoted string (as in the IETF draft, `"` and `\` escaped; a key with a space goes quoted). A key quoted and the same key bare are one key. Unique per API key, sent once. Kept `IDEMPOTENCY_RETENTION_S` (24 hours by default). The same key with the same pet replays the first 201 (with `Idempotent-Replayed: true`); with a different pet it is 422; while the first request is still running it is 409. */
                "idempotency-key"?: string;
                /** @description The caller's own id for this request, echoed in the response's X-Request-Id and written in the service's log; one that is not 1 to 128 letters, digits or `._:-` (or holds a key) is replaced. */
                "x-request-id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewPet"];
            };
        };
        responses: {
            /** @description The created animal (or, for a replayed Idempotency-Key, the animal created the first time). */
            201: {
                headers: {
                    /** @description The URL of the created animal (relative when no public base URL is known): the animal's identity. Reading it is getPet, deprecated and scheduled for removal on 5 December 2030; the animal is in listPets. */
                    Location: string;
                    /** @description Present, `true`, when this is the replay of an earlier create. */
                    "Idempotent-Replayed"?: "true";
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pet"];
                };
            };
            /** @description `bad_request`: The request could not be read (malformed URL, bad header, bad framing). `malformed_json`: The request body is not valid JSON (or not UTF-8, or nested more than 64 levels). `invalid_body`: The body is missing or empty, or breaks the NewPet schema; the message names the field. `invalid_idempotency_key`: The Idempotency-Key header is malformed or repeated. `invalid_query`: A query parameter is unknown, repeated or out of range. */
            400: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthorized`: The bearer API key is missing, malformed, unknown or revoked. */
            401: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description The bearer challenge (RFC 6750). */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `request_timeout`: The request was not received in time. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `idempotency_key_in_flight`: A request with the same Idempotency-Key is still being processed; retry later. */
            409: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Seconds to wait before retrying: the first request with this Idempotency-Key is still running. */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `body_too_large`: The request body is over the size limit. */
            413: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: The request target (path and query) is over 8 KiB. */
            414: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unsupported_media_type`: The body is not UTF-8 application/json, or is content-encoded. */
            415: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Present when the body was refused for its Content-Encoding: only `identity` is accepted. */
                    "Accept-Encoding"?: "identity";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `expectation_failed`: The Expect header asks for something other than 100-continue. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `idempotency_key_reused`: The Idempotency-Key was already used with a different request body. */
            422: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `rate_limited`: Too many requests for this API key; see Retry-After. */
            429: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit": string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining": string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset": string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Seconds until the limit resets. */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: The request line or headers are too large. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `internal_error`: An unexpected failure; the detail is in the server log. */
            500: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `service_unavailable`: The service cannot answer now (store down, overload, shutdown). */
            503: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Seconds to wait before retrying. */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `pet_ids_exhausted`: Every pet id, up to the largest int64, has been given out: no pet can be added. */
            507: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getPet: {
        parameters: {
            query?: never;
            header?: {
                /** @description The caller's own id for this request, echoed in the response's X-Request-Id and written in the service's log; one that is not 1 to 128 letters, digits or `._:-` (or holds a key) is replaced. */
                "x-request-id"?: string;
                /** @description An ETag this response had: 304 Not Modified, with no body, while it still holds. */
                "if-none-match"?: string;
            };
            path: {
                /** @description The identifier of the animal to retrieve. An integer literal: `1.0`, `1e2`, `-0` and `01` are not int64 values here. */
                petId: bigint;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The animal. */
            200: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link: string;
                    /** @description Strong validator of this exact response; send it back in If-None-Match. */
                    ETag: string;
                    /** @description Clients may keep the response but must revalidate it. */
                    "Cache-Control": "private, no-cache";
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pet"];
                };
            };
            /** @description Not modified: the If-None-Match tag still holds. */
            304: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link: string;
                    /** @description Strong validator of this exact response; send it back in If-None-Match. */
                    ETag: string;
                    /** @description Clients may keep the response but must revalidate it. */
                    "Cache-Control": "private, no-cache";
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `bad_request`: The request could not be read (malformed URL, bad header, bad framing). `invalid_query`: A query parameter is unknown, repeated or out of range. `invalid_path_parameter`: A path parameter is not valid (petId must be an int64). */
            400: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation?: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset?: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link?: string;
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `unauthorized`: The bearer API key is missing, malformed, unknown or revoked. */
            401: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation?: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset?: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link?: string;
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description The bearer challenge (RFC 6750). */
                    "WWW-Authenticate": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `pet_not_found`: No pet has the requested id. */
            404: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation?: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset?: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link?: string;
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `request_timeout`: The request was not received in time. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `gone`: The operation was removed after its sunset date. */
            410: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation?: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset?: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link?: string;
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `uri_too_long`: The request target (path and query) is over 8 KiB. */
            414: {
                headers: {
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `expectation_failed`: The Expect header asks for something other than 100-continue. */
            417: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `rate_limited`: Too many requests for this API key; see Retry-After. */
            429: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation?: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset?: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link?: string;
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit": string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining": string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset": string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Seconds until the limit resets. */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `headers_too_large`: The request line or headers are too large. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `internal_error`: An unexpected failure; the detail is in the server log. */
            500: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation?: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset?: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link?: string;
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description `service_unavailable`: The service cannot answer now (store down, overload, shutdown). */
            503: {
                headers: {
                    /** @description `@<epoch seconds>` (RFC 9745): when this operation was deprecated. */
                    Deprecation?: string;
                    /** @description `Thu, 05 Dec 2030 00:00:00 GMT` (RFC 8594): when this operation is removed. */
                    Sunset?: string;
                    /** @description `<…/pets>; rel="successor-version"`: the operation to use instead. */
                    Link?: string;
                    /** @description The request's id: the client's own `X-Request-Id` when it is 1 to 128 letters, digits or `._:-` and holds no API key, else a new one. It names the request in the log; quote it when reporting a problem. */
                    "X-Request-Id": string;
                    /** @description Browsers take the answer as its `Content-Type` says. */
                    "X-Content-Type-Options": "nosniff";
                    /** @description Requests allowed to this API key per 60-second window (`RATE_LIMIT_PER_MINUTE`). */
                    "RateLimit-Limit"?: string;
                    /** @description Requests left in the current window. */
                    "RateLimit-Remaining"?: string;
                    /** @description Seconds until the current window ends. */
                    "RateLimit-Reset"?: string;
                    /** @description The request's `Origin`, when it is one of `CORS_ORIGINS` (CORS is off by default). */
                    "Access-Control-Allow-Origin"?: string;
                    /** @description The headers a script of that origin may read, with `Access-Control-Allow-Origin`. */
                    "Access-Control-Expose-Headers"?: string;
                    /** @description `Origin` when CORS is on: the answer depends on the request's origin. */
                    Vary?: "Origin";
                    /** @description No cache keeps the answer: it holds per-key data or a passing state. */
                    "Cache-Control": "no-store";
                    /** @description Seconds to wait before retrying. */
                    "Retry-After": string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
