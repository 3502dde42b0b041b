import { NoSchemaError } from '../store.ts'
import type { PostgresPool } from './postgres-connection.ts'

// Where this session's tables are: the one place migrations make them and a copy reads them from.

/** The session's role, database and schema (quoted as identifiers, for messages), and its search path. */
export interface Place {
  role: string
  database: string
  /** None when the search path names no schema that exists and this role may use. */
  schema: string | null
  search_path: string
}

export const PLACE_COLUMNS = `quote_ident(current_user) AS role, quote_ident(current_database()) AS database,
  quote_ident(current_schema()) AS schema, current_setting('search_path') AS search_path`

/**
 * The tables of the current schema, as CREATE TABLE makes them there: another application's table of the
 * same name elsewhere on the search path is not ours. Tables only, whatever this role may read, and none an
 * extension made (pg_stat_statements' view, PostGIS's spatial_ref_sys): those share any database.
 */
export const CURRENT_SCHEMA_TABLES = `SELECT c.relname AS name FROM pg_class c
  WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
    AND c.relkind IN ('r', 'p')
    AND NOT EXISTS (SELECT 1 FROM pg_depend d
      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
  ORDER BY c.relname`

export const placeName = ({ database, schema }: Place): string => `database ${database}, schema ${schema}`

/**
 * Why nothing can be made or read: PostgreSQL's own line ("no schema has been selected to create in")
 * names neither the path (a typo in the URL's `options`) nor a schema the role may not use (its USAGE
 * revoked from PUBLIC, as hardening guides advise).
 */
export function noUsableSchema({ role, database, search_path }: Place): Error {
  return new Error(
    `the search_path (${search_path}) names no schema in database ${database} that the role ${role} may ` +
      `use: create one (CREATE SCHEMA …), GRANT USAGE, CREATE ON SCHEMA … TO ${role}, or name another ` +
      '(options=-c search_path=… in the URL)',
  )
}

/** A copy's source is read where a migration makes the tables, and so where serve and the commands read. */
export async function refuseSourceWithoutTables(pool: PostgresPool): Promise<void> {
  const [place] = await pool.query<Place>({ name: 'copy.place', text: `SELECT ${PLACE_COLUMNS}` })
  if (place === undefined) throw new Error('the source did not answer')
  if (place.schema === null) throw noUsableSchema(place)
  const tables = await pool.query<{ name: string }>({ name: 'copy.tables', text: CURRENT_SCHEMA_TABLES })
  if (!tables.some((table) => table.name === 'schema_migrations')) throw new NoSchemaError(placeName(place))
}
