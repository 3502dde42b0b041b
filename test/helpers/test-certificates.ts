import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { hasCommand, type Lack } from './suite-requirements.ts'

export interface TestCertificates {
  /** The certificate authority's certificate (PEM): what a client is told to trust. */
  ca: string
  /** A server certificate signed by it, for 127.0.0.1 and localhost, and its key (PEM files). */
  cert: string
  key: string
}

/** Why certificates cannot be made here, or undefined when they can. */
export function opensslLack(): Lack | undefined {
  return hasCommand('openssl')
    ? undefined
    : { missing: 'no openssl on this machine', remedy: 'apt-get install openssl' }
}

/**
 * A throwaway certificate authority and a loopback server certificate it signed, in `directory`; with
 * `clientOnly`, a certificate for clients alone (extendedKeyUsage clientAuth), which no server may use.
 */
export function makeTestCertificates(directory: string, { clientOnly = false } = {}): TestCertificates {
  const path = (name: string) => join(directory, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' })
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=petstore test CA',
    '-keyout',
    path('ca.key'),
    '-out',
    path('ca.pem'),
  )
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=localhost',
    '-keyout',
    path('server.key'),
    '-out',
    path('server.csr'),
  )
  const purpose = clientOnly ? 'extendedKeyUsage=clientAuth\n' : ''
  writeFileSync(path('server.ext'), `subjectAltName=IP:127.0.0.1,DNS:localhost\n${purpose}`)
  openssl(
    'x509',
    '-req',
    '-in',
    path('server.csr'),
    '-CA',
    path('ca.pem'),
    '-CAkey',
    path('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    path('server.ext'),
    '-out',
    path('server.pem'),
  )
  return { ca: path('ca.pem'), cert: path('server.pem'), key: path('server.key') }
}
