/** Creates through a PostgreSQL store, inserts held inside their transaction, and who waits on what. */
import type pg from 'pg'
import type { NewPet, Pet } from '../../src/schemas/pet.ts'
import type { PostgresStore } from '../../src/store/postgres/postgres-store.ts'

/** Creates `pet` through `store` and returns it, with the id the store gave it. */
export const create = async (store: PostgresStore, pet: NewPet): Promise<Pet> =>
  (await store.createPet({ pet })).pet

/** From now on, the insert of a pet named 'slow' sleeps 1 s in its transaction, its id already drawn. */
export async function holdInsertsOfSlow(admin: pg.Client): Promise<void> {
  await admin.query(`CREATE FUNCTION hold_slow() RETURNS trigger LANGUAGE plpgsql AS
    $$ BEGIN IF NEW.name = 'slow' THEN PERFORM pg_sleep(1); END IF; RETURN NEW; END $$`)
  await admin.query(
    'CREATE TRIGGER hold_slow BEFORE INSERT ON pets FOR EACH ROW EXECUTE FUNCTION hold_slow()',
  )
}

/** Whether a session on the database waits on `event` (pg_stat_activity's wait_event). */
export async function someoneWaitsOn(admin: pg.Client, event: string): Promise<boolean> {
  const { rowCount } = await admin.query(
    'SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = $1',
    [event],
  )
  return rowCount !== 0
}
