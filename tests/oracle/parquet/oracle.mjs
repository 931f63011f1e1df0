// Independent Parquet readers and writers for Feedrate's tests: hyparquet (pure JavaScript) and DuckDB (C++,
// through @duckdb/node-api). Neither shares code with Feedrate.
//   node oracle.mjs read <file>          both readers: rows, and per column: values, sum, min, max (JSON)
//   node oracle.mjs meta <file>          DuckDB's parquet_metadata(): every column chunk's offsets and sizes (JSON)
//   node oracle.mjs write <dir> <rows> <row_group_size>
//                                        files written by DuckDB with each codec and by hyparquet-writer
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects } from 'hyparquet';
import { parquetWriteFile } from 'hyparquet-writer';
import { DuckDBInstance } from '@duckdb/node-api';

function summarize(rows, names) {
  const out = {};
  for (const n of names) out[n] = { values: 0, sum: 0, min: Infinity, max: -Infinity };
  for (const row of rows) {
    for (const n of names) {
      const v = row[n];
      const vals = Array.isArray(v) || ArrayBuffer.isView(v) ? v : [v];
      const s = out[n];
      for (let x of vals) {
        if (typeof x === 'boolean') x = x ? 1 : 0;
        if (typeof x === 'bigint') x = Number(x);
        s.values += 1;
        s.sum += x;
        if (x < s.min) s.min = x;
        if (x > s.max) s.max = x;
      }
    }
  }
  return out;
}

async function readHyparquet(file) {
  const buf = await asyncBufferFromFile(file);
  const meta = await parquetMetadataAsync(buf);
  const names = meta.schema.slice(1).filter((e, i, all) => true).length ? topNames(meta.schema) : [];
  const rows = await parquetReadObjects({ file: buf, metadata: meta });
  return { rows: rows.length, columns: summarize(rows, names) };
}

function topNames(schema) {
  const names = [];
  let i = 1;
  for (let c = 0; c < schema[0].num_children; ++c) {
    names.push(schema[i].name);
    let open = 1;
    while (open > 0) { open += (schema[i].num_children || 0) - 1; ++i; }
  }
  return names;
}

async function duck() {
  const inst = await DuckDBInstance.create(':memory:');
  return inst.connect();
}

async function readDuckdb(file) {
  const con = await duck();
  const lit = `'${file.replaceAll("'", "''")}'`;
  const desc = (await con.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${lit})`)).getRowObjects();
  const rows = Number((await con.runAndReadAll(`SELECT count(*) AS n FROM read_parquet(${lit})`)).getRowObjects()[0].n);
  const columns = {};
  for (const d of desc) {
    const q = `"${d.column_name}"`;
    const list = d.column_type.endsWith(']');
    const x = list ? 'x' : q;
    const cast = d.column_type.startsWith('BOOLEAN') ? `${x}::INTEGER` : `${x}::DOUBLE`;
    const from = list ? `(SELECT unnest(${q}) AS x FROM read_parquet(${lit}))` : `read_parquet(${lit})`;
    const r = (await con.runAndReadAll(
      `SELECT count(${x}) AS values, sum(${cast}) AS sum, min(${cast}) AS min, max(${cast}) AS max FROM ${from}`)).getRowObjects()[0];
    columns[d.column_name] = { values: Number(r.values), sum: Number(r.sum), min: Number(r.min), max: Number(r.max), type: d.column_type };
  }
  return { rows, columns };
}

async function meta(file) {
  const con = await duck();
  const lit = `'${file.replaceAll("'", "''")}'`;
  const rows = (await con.runAndReadAll(
    `SELECT row_group_id, row_group_num_rows, column_id, path_in_schema, type, compression, num_values,
            data_page_offset, dictionary_page_offset, total_compressed_size, total_uncompressed_size, encodings
     FROM parquet_metadata(${lit}) ORDER BY row_group_id, column_id`)).getRowObjects();
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v])));
}

async function write(dir, rows, rowGroup) {
  const con = await duck();
  const made = [];
  const table = `SELECT (i * 0.001)::FLOAT AS f32, (i % 100)::TINYINT AS i8, i::BIGINT AS i64, (i * 0.5)::DOUBLE AS f64,
                        [i::FLOAT, (i + 1)::FLOAT, (i + 2)::FLOAT, (i + 3)::FLOAT] AS vec,
                        CASE WHEN i % 7 = 0 THEN NULL ELSE i END::INTEGER AS maybe FROM range(${rows}) t(i)`;
  for (const codec of ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4']) {
    const f = `${dir}/duckdb_${codec}.parquet`;
    await con.run(`COPY (${table}) TO '${f}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE ${rowGroup})`);
    made.push(f);
  }
  // Format version 2: data pages v2, BYTE_STREAM_SPLIT floats, DELTA_BINARY_PACKED integers.
  const v2 = `${dir}/duckdb_v2_zstd.parquet`;
  await con.run(`COPY (${table}) TO '${v2}' (FORMAT parquet, COMPRESSION zstd, PARQUET_VERSION V2, ROW_GROUP_SIZE ${rowGroup})`);
  made.push(v2);
  const f = `${dir}/hyparquet_snappy.parquet`;
  const ints = Array.from({ length: rows }, (_, i) => i);
  parquetWriteFile({
    filename: f,
    columnData: [
      { name: 'f64', data: ints.map((i) => i * 0.5), type: 'DOUBLE' },
      { name: 'i32', data: Int32Array.from(ints), type: 'INT32' },
    ],
    rowGroupSize: rowGroup,
  });
  made.push(f);
  return made;
}

const [cmd, ...args] = process.argv.slice(2);
let result;
if (cmd === 'read') {
  result = { hyparquet: await readHyparquet(args[0]), duckdb: await readDuckdb(args[0]) };
} else if (cmd === 'read-duckdb') {
  result = { duckdb: await readDuckdb(args[0]) };
} else if (cmd === 'meta') {
  result = await meta(args[0]);
} else if (cmd === 'write') {
  result = await write(args[0], Number(args[1]), Number(args[2]));
} else {
  console.error('usage: oracle.mjs read|read-duckdb|meta <file> | write <dir> <rows> <row_group_size>');
  process.exit(2);
}
console.log(JSON.stringify(result, (k, v) => (typeof v === 'bigint' ? Number(v) : v)));
