/**
 * The time an HTTP-date names (RFC 9110 §5.6.7), in milliseconds since the epoch, or NaN for text that is
 * none. Its obsolete asctime form (`Sun Nov  6 08:49:37 1994`) carries no zone and means GMT, where
 * `Date.parse` alone would read the machine's local time.
 */
export function parseHttpDate(value: string): number {
  const text = value.trim()
  // An HTTP-date opens with its day's name (Sun, Sunday): Date.parse alone would read "-1" as a year.
  if (!/^[A-Za-z]{3}/.test(text)) return Number.NaN
  return Date.parse(/\d{4}$/.test(text) ? `${text} GMT` : text)
}
