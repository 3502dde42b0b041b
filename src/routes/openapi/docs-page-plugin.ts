// Runs in the docs page, not in the service: @fastify/swagger-ui writes the function's source into the
// page's initializer script (a served file, as the CSP wants). So it uses nothing from outside itself.

interface ResponseBodyProps {
  content?: unknown
  contentType?: string
}

interface SwaggerUiSystem {
  React: { createElement(type: unknown, props: object | null, ...children: unknown[]): unknown }
  getComponent(name: string, container?: boolean): unknown
}

/**
 * A Swagger UI plugin: a JSON response body is shown as the exact text received, only re-indented. Swagger
 * UI itself parses it with JSON.parse and prints it again (swagger-ui issues #2030, #10049), which rounds
 * every integer above 2^53: a pet created with categoryId 9007199254740993 was shown with …992.
 */
export function exactJsonBodies() {
  // Indents JSON text by its structure alone: strings and numbers are copied character for character.
  function prettyJson(text: string): string {
    let out = ''
    let depth = 0
    const newline = () => `\n${'  '.repeat(depth)}`
    for (let i = 0; i < text.length; i++) {
      const c = text.charAt(i)
      if (c === '"') {
        let end = i + 1
        while (end < text.length && text.charAt(end) !== '"') end += text.charAt(end) === '\\' ? 2 : 1
        out += text.slice(i, end + 1)
        i = end
      } else if (c === '{' || c === '[') {
        const rest = text.slice(i + 1).trimStart()
        if (rest.startsWith(c === '{' ? '}' : ']')) {
          out += c === '{' ? '{}' : '[]'
          i = text.length - rest.length
        } else {
          depth++
          out += c + newline()
        }
      } else if (c === '}' || c === ']') {
        depth--
        out += newline() + c
      } else if (c === ',') out += `,${newline()}`
      else if (c === ':') out += ': '
      else if (!/\s/.test(c)) out += c
    }
    return out
  }

  function isJson(text: string): boolean {
    try {
      JSON.parse(text)
      return true
    } catch {
      return false
    }
  }

  return {
    wrapComponents: {
      responseBody:
        (Original: unknown, system: SwaggerUiSystem) =>
        (props: ResponseBodyProps): unknown => {
          const { content, contentType } = props
          const h = system.React.createElement
          if (typeof content !== 'string' || !/json/i.test(contentType ?? '') || !isJson(content)) {
            return h(Original, props)
          }
          const code = h(
            system.getComponent('HighlightCode', true),
            { language: 'json', downloadable: true, fileName: 'response.json', canCopy: true },
            prettyJson(content),
          )
          return h('div', null, h('h5', null, 'Response body'), code)
        },
    },
  }
}
