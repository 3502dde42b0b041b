// Node's and OpenSSL's codes for a TLS server certificate refused (a database's, Redis's), read by what
// must be mended: the engines and the Redis connection say it in their own words.

/** Why a TLS server certificate was refused, by what must be mended. */
export interface CertificateRefusal {
  /** Node's code: OpenSSL's verify error, or its own for a name that does not match. */
  code: string
  /** What is wrong with it, after "the certificate": "does not name the host the URL gives". */
  problem: string
  /** Whether the remedy is to name the CA that signed it. */
  unsigned: boolean
}

const CERTIFICATE_PROBLEMS: ReadonlyArray<[RegExp, string, boolean]> = [
  [/^(ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH)$/, 'does not name the host the URL gives', false],
  [
    /^(CERT_HAS_EXPIRED|CERT_NOT_YET_VALID|ERROR_IN_CERT_NOT_(BEFORE|AFTER)_FIELD)$/,
    'is outside its validity dates',
    false,
  ],
  [
    /^(UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_|CERT_UNTRUSTED$)/,
    'is not signed by a CA this service trusts',
    true,
  ],
  [/^(CERT_|CRL_|INVALID_|PATH_LENGTH_|ERROR_IN_)/, 'is refused (its signature, purpose or chain)', false],
]

/** Why `error` refused a TLS server certificate, or undefined when it is no such refusal. */
export function refusedCertificate(error: unknown): CertificateRefusal | undefined {
  const { code } = error as { code?: unknown }
  if (typeof code !== 'string') return undefined
  const found = CERTIFICATE_PROBLEMS.find(([codes]) => codes.test(code))
  return found === undefined ? undefined : { code, problem: found[1], unsigned: found[2] }
}
