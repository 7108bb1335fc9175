-- libhpf hardware feature database: the schema. Data lives in hwdb/data/*.sql, one file per
-- vendor or family; the build loads this file and then every data file into hwdb.sqlite.
--
-- Every figure names its source: a row of `source` (a datasheet or whitepaper title).
-- Peaks are dense (no structured sparsity), in TFLOPS for float formats and TOPS for integer
-- formats, at the boost clock the datasheet quotes.
PRAGMA foreign_keys = ON;

CREATE TABLE source (
  id    TEXT PRIMARY KEY,          -- short key used by other tables, e.g. 'nvidia-h100-datasheet'
  title TEXT NOT NULL,             -- the document's name as published
  url   TEXT                       -- where it was published, when known
);

-- The numeric formats the database speaks about.
CREATE TABLE format (
  name TEXT PRIMARY KEY CHECK (name IN ('fp64','fp32','tf32','bf16','fp16','fp8','fp4','int8','int4')),
  unit TEXT NOT NULL CHECK (unit IN ('tflops','tops'))
);

CREATE TABLE architecture (
  name               TEXT PRIMARY KEY,   -- 'hopper', 'cdna3', 'zen3', 'hexagon-v75', ...
  vendor             TEXT NOT NULL,
  kind               TEXT NOT NULL CHECK (kind IN ('gpu','cpu','npu')),
  family             TEXT NOT NULL,      -- marketing generation: 'Hopper', 'CDNA 3', 'Zen 3'
  compute_capability TEXT,               -- NVIDIA: '9.0'
  gfx_target         TEXT,               -- AMD: 'gfx942'
  fp8_flavor         TEXT NOT NULL DEFAULT 'none' CHECK (fp8_flavor IN ('ocp','fnuz','none')),
  source             TEXT NOT NULL REFERENCES source(id)
);

-- For every architecture, op class and format: does the hardware run it natively, emulate it
-- (converts to a wider format and computes there), or not at all. 'matrix' = tensor cores,
-- matrix cores, AMX, i8mm...; 'vector' = SIMD / CUDA cores.
CREATE TABLE support (
  arch     TEXT NOT NULL REFERENCES architecture(name),
  op_class TEXT NOT NULL CHECK (op_class IN ('matrix','vector')),
  format   TEXT NOT NULL REFERENCES format(name),
  level    TEXT NOT NULL CHECK (level IN ('native','emulated','absent')),
  source   TEXT NOT NULL REFERENCES source(id),
  PRIMARY KEY (arch, op_class, format)
);

CREATE TABLE product (
  name                 TEXT PRIMARY KEY,  -- 'NVIDIA H100 SXM5 80GB'
  short_name           TEXT NOT NULL UNIQUE, -- 'h100-sxm'
  vendor               TEXT NOT NULL,
  arch                 TEXT NOT NULL REFERENCES architecture(name),
  segment              TEXT NOT NULL CHECK (segment IN ('datacenter','workstation','consumer','edge','server-cpu','client-cpu')),
  memory_gib           REAL CHECK (memory_gib > 0),
  memory_bandwidth_gbs REAL CHECK (memory_bandwidth_gbs > 0),
  tdp_w                REAL CHECK (tdp_w > 0),
  units                INTEGER CHECK (units > 0),   -- SMs, CUs, or CPU cores
  boost_clock_ghz      REAL CHECK (boost_clock_ghz > 0),
  source               TEXT NOT NULL REFERENCES source(id)
);

CREATE TABLE peak (
  product TEXT NOT NULL REFERENCES product(name),
  format  TEXT NOT NULL REFERENCES format(name),
  dense   REAL NOT NULL CHECK (dense >= 0),      -- TFLOPS or TOPS (format.unit), no sparsity
  op_class TEXT NOT NULL CHECK (op_class IN ('matrix','vector')),  -- which units reach it
  source  TEXT NOT NULL REFERENCES source(id),
  PRIMARY KEY (product, format)
);

-- CPUs by ISA level. A feature is what the CPU reports (cpuid / HWCAP); its throughput is the
-- operations per cycle per core (a fused multiply-add counts 2) that it enables for a format,
-- so a CPU's peak = cores x clock x the best throughput among the features it has.
CREATE TABLE isa_feature (
  name        TEXT PRIMARY KEY,            -- 'avx2-fma', 'avx512-vnni', 'amx-bf16', 'neon', 'i8mm'
  isa         TEXT NOT NULL CHECK (isa IN ('x86-64','aarch64')),
  requires    TEXT NOT NULL,               -- cpu flags that must all be present, space-separated
  description TEXT NOT NULL,
  source      TEXT NOT NULL REFERENCES source(id)
);

CREATE TABLE isa_throughput (
  feature        TEXT NOT NULL REFERENCES isa_feature(name),
  format         TEXT NOT NULL REFERENCES format(name),
  op_class       TEXT NOT NULL CHECK (op_class IN ('matrix','vector')),
  level          TEXT NOT NULL CHECK (level IN ('native','emulated')),
  ops_per_cycle  REAL NOT NULL CHECK (ops_per_cycle > 0),  -- per core
  source         TEXT NOT NULL REFERENCES source(id),
  PRIMARY KEY (feature, format)
);

-- Which ISA features each CPU architecture has.
CREATE TABLE arch_feature (
  arch    TEXT NOT NULL REFERENCES architecture(name),
  feature TEXT NOT NULL REFERENCES isa_feature(name),
  PRIMARY KEY (arch, feature)
);

INSERT INTO format VALUES ('fp64','tflops'),('fp32','tflops'),('tf32','tflops'),('bf16','tflops'),
  ('fp16','tflops'),('fp8','tflops'),('fp4','tflops'),('int8','tops'),('int4','tops');
