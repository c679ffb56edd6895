// A budgeted walk: a page of a list whose filter no index serves reads at most a budget of an index range's rows,
// not the range (docs/architecture.md, "Short pages with a cursor"). The customer search by a common term
// (crm/customers/store.ts), a resource's events of a type (events/store.ts) and the admin log lists
// (webhooks/store.ts) are such lists: their filter is rare within the range, or the range is long.

/** A walk: the range it reads (`where`, in `order`, which ends with the id) and what its page keeps. */
export interface Walk {
  /** The table and its alias, which the other parts use (the walk's rows go by that alias too). */
  table: string;
  alias: string;
  /** The range's conditions (an index range), and its order (ending with the id): the rows come in that order. */
  where: string[];
  order: string;
  /**
   * Which rows the page keeps: tested on each row as the walk reads it, or after `joins` when it uses what they bring
   * (`hitAfterJoins`). Tested in the walk, it is a column of the walk to the planner, whose share of the rows it
   * does not guess: written out after it, the planner took a rare share from the type's statistics, expected to read
   * the whole budget for a page, and sorted the resource's every event for it (890 pages where 19 did, on PGlite).
   */
  hit: string;
  hitAfterJoins?: boolean;
  /** How many rows of the range the page reads at most. */
  budget: number;
  /** How many rows the statement returns at most (the page's size and one more, or more to be cut later). */
  limit: string | number;
  /** The rows' columns the page returns. */
  columns: string;
  /** What each row of the walk is joined to (LEFT JOINs, LATERAL probes), before `hit` is tested. */
  joins?: string;
}

/**
 * The statement of a budgeted page: the first `budget` rows of the range, numbered in order, each joined to what `hit`
 * needs; those `hit` keeps, and the budget's last row (its edge), up to `limit`, in order. A common filter stops after
 * a page of hits (streamed); a rare one reads the budget. Each row carries `scan_hit` and `scan_edge`: the edge is the
 * statement's own last row read, where the next page goes on (rows that entered the range meanwhile cannot push it
 * back: the review of 2026-11-30). Ordered by the range's columns, which the planner knows the walk's rows come in
 * (ordered by the row number, it sorted the whole budget).
 */
export function walkSql(w: Walk): string {
  const where = w.where.length ? `WHERE ${w.where.join(' AND ')}` : '';
  const [inner, hit] = w.hitAfterJoins ? ['', `(${w.hit})`] : [`(${w.hit}) AS scan_hit, `, `${w.alias}.scan_hit`];
  return `SELECT ${w.columns}, ${hit} AS scan_hit, ${w.alias}.scan_k = ${w.budget} AS scan_edge
     FROM (SELECT *, ${inner}row_number() OVER (ORDER BY ${w.order}) AS scan_k FROM ${w.table} ${w.alias} ${where} ORDER BY ${w.order} LIMIT ${w.budget}) ${w.alias}
     ${w.joins ?? ''} WHERE ${hit} OR ${w.alias}.scan_k = ${w.budget} ORDER BY ${w.order} LIMIT ${w.limit}`;
}

/** A row of walkSql's answer. */
export type Walked<R> = R & { scan_hit: boolean; scan_edge: boolean };

/**
 * A budgeted page's rows: those its filter kept (without the walk's columns), and the budget's last row, when read. A
 * row without the walk's columns (a page of a list that needed no walk) is kept.
 */
export function walked<R>(rows: (R & Partial<Walked<unknown>>)[]): { page: R[]; edge: R | undefined } {
  const strip = ({ scan_hit: _h, scan_edge: _e, ...row }: R & Partial<Walked<unknown>>) => row as unknown as R;
  const edge = rows.find((r) => r.scan_edge === true);
  return { page: rows.filter((r) => r.scan_hit !== false).map(strip), edge: edge && strip(edge) };
}
