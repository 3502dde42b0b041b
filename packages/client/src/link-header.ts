/**
 * The target of the first link with relation `relation` (`next`, `successor-version`) in a response's
 * `Link` header (RFC 8288), resolved against the response's URL; undefined when there is none.
 */
export function linkOf(response: Response, relation: string): URL | undefined {
  const header = response.headers.get('link')
  if (header === null) return undefined
  // A response made by hand (a test's, a wrapper's) may have no URL.
  const responseUrl = response.url || 'http://localhost/'
  // Each link is `<target>` followed by `; name=value` parameters. Targets and quoted values may contain
  // commas and semicolons, so links are matched whole rather than split on commas.
  const links = /<([^>]*)>((?:\s*;\s*[^;,="\s]+\s*(?:=\s*(?:"[^"]*"|[^;,"\s]*))?)*)/g
  const parameters = /;\s*([^;,="\s]+)\s*(?:=\s*(?:"([^"]*)"|([^;,"\s]*)))?/g
  for (const [, target = '', params = ''] of header.matchAll(links)) {
    for (const [, name = '', quoted, bare] of params.matchAll(parameters)) {
      const relations = (quoted ?? bare ?? '').toLowerCase().split(/\s+/)
      if (name.toLowerCase() === 'rel' && relations.includes(relation)) return new URL(target, responseUrl)
    }
  }
  return undefined
}
