/**
 * The target of the first link with relation `relation` (`next`, `successor-version`) in a `Link` header
 * (RFC 8288), resolved against the URL of the response that carried it; undefined when there is none.
 */
export function linkOf(header: string | null, responseUrl: string, relation: string): URL | undefined {
  if (header === null) return undefined
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
