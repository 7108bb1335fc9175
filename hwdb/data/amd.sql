-- AMD GPUs: Instinct (CDNA 1-3) and Radeon (RDNA 2-3).
--
-- Conventions as in nvidia.sql: dense peaks at the peak engine clock; one peak row per format
-- holding the best rate (op_class says which units; the other unit's published rate is in the
-- comment); memory_gib = the datasheet's "GB" of HBM/GDDR (binary capacities); bandwidth in
-- decimal GB/s. AMD datasheets print dense figures ("with structured sparsity" figures, MI300X
-- only, are not used).
--
-- Support levels follow the rule stated in nvidia.sql. Instruction availability per gfx target
-- was checked by assembling with LLVM 19 (llvm-mc -mcpu=gfx908/gfx90a/gfx942/gfx1030/gfx1100):
--   vector: v_dot4_i32_i8 and v_dot8_i32_i4 assemble on gfx908/gfx90a/gfx942/gfx1030,
--           v_dot4_i32_iu8 / v_dot8_i32_iu4 on gfx1100 -> int8 and int4 'native' everywhere;
--           v_dot2_f32_bf16 only on gfx1100 -> bf16 'native' there, 'emulated' (widened to FP32)
--           elsewhere; v_cvt_f32_fp8 / v_cvt_pk_f32_fp8 only on gfx942 -> fp8 'emulated' there,
--           'absent' elsewhere; no FP4 conversions on any of these targets.
--   matrix: MFMA f32 / f16 / bf16 / i8 on gfx908; + f64 on gfx90a; + xf32 (TF32) and fp8/bf8
--           on gfx942; no sub-byte integer MFMA on any CDNA target (the INT4 figures AMD prints
--           for MI100/MI200 equal the INT8 ones: INT4 widened to INT8 -> 'emulated').
--           RDNA 3 WMMA: f16, bf16, iu8, iu4. RDNA 2 has no matrix units.
--   TF32 on CDNA 1/2 matrix cores: run as FP32 MFMA -> 'emulated'.

INSERT INTO source (id, title, url) VALUES
  ('llvm-amdgpu-usage', 'User Guide for AMDGPU Backend (LLVM)', 'https://llvm.org/docs/AMDGPUUsage.html'),
  ('amd-cdna1-isa', 'AMD Instinct MI100 Instruction Set Architecture Reference Guide', NULL),
  ('amd-cdna2-isa', 'AMD Instinct MI200 Instruction Set Architecture Reference Guide', NULL),
  ('amd-cdna3-isa', 'AMD Instinct MI300 Instruction Set Architecture Reference Guide', NULL),
  ('amd-rdna2-isa', 'AMD RDNA 2 Instruction Set Architecture Reference Guide', NULL),
  ('amd-rdna3-isa', 'AMD RDNA 3 Instruction Set Architecture Reference Guide', NULL),
  ('amd-gpuopen-rdna4-matrix-cores', 'Using the Matrix Cores of AMD RDNA 4 architecture GPUs (AMD GPUOpen)', NULL),
  ('amd-mi100-datasheet', 'AMD Instinct MI100 Accelerator Datasheet', NULL),
  ('amd-mi210-datasheet', 'AMD Instinct MI210 Accelerator Datasheet', NULL),
  ('amd-mi250x-datasheet', 'AMD Instinct MI250X Accelerator Datasheet', NULL),
  ('amd-mi300x-datasheet', 'AMD Instinct MI300X Accelerator Datasheet', NULL),
  ('amd-rx6900xt-specs', 'AMD Radeon RX 6900 XT Graphics - Specifications', NULL),
  ('amd-rx7900xtx-specs', 'AMD Radeon RX 7900 XTX Graphics - Specifications', NULL);

-- gfx targets from LLVM's AMDGPU processor table. FP8 on gfx942 uses the FNUZ encodings
-- (E4M3FNUZ / E5M2FNUZ: no infinities, single NaN, bias 8 / 16), not the OCP ones.
INSERT INTO architecture (name, vendor, kind, family, compute_capability, gfx_target, fp8_flavor, source) VALUES
  ('cdna1', 'AMD', 'gpu', 'CDNA',   NULL, 'gfx908',  'none', 'llvm-amdgpu-usage'),
  ('cdna2', 'AMD', 'gpu', 'CDNA 2', NULL, 'gfx90a',  'none', 'llvm-amdgpu-usage'),
  ('cdna3', 'AMD', 'gpu', 'CDNA 3', NULL, 'gfx942',  'fnuz', 'llvm-amdgpu-usage'),
  ('rdna2', 'AMD', 'gpu', 'RDNA 2', NULL, 'gfx1030', 'none', 'llvm-amdgpu-usage'),
  ('rdna3', 'AMD', 'gpu', 'RDNA 3', NULL, 'gfx1100', 'none', 'llvm-amdgpu-usage');

INSERT INTO support (arch, op_class, format, level, source) VALUES
  -- CDNA 1 (MI100) Matrix Cores
  ('cdna1', 'matrix', 'fp64', 'absent',   'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'fp32', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'tf32', 'emulated', 'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'bf16', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'fp16', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'fp8',  'absent',   'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'fp4',  'absent',   'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'int8', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'matrix', 'int4', 'emulated', 'amd-cdna1-isa'),
  -- CDNA 1 vector ALUs
  ('cdna1', 'vector', 'fp64', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'vector', 'fp32', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'vector', 'tf32', 'emulated', 'amd-cdna1-isa'),
  ('cdna1', 'vector', 'bf16', 'emulated', 'amd-cdna1-isa'),
  ('cdna1', 'vector', 'fp16', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'vector', 'fp8',  'absent',   'amd-cdna1-isa'),
  ('cdna1', 'vector', 'fp4',  'absent',   'amd-cdna1-isa'),
  ('cdna1', 'vector', 'int8', 'native',   'amd-cdna1-isa'),
  ('cdna1', 'vector', 'int4', 'native',   'amd-cdna1-isa'),

  -- CDNA 2 (MI200) Matrix Cores: adds FP64 MFMA
  ('cdna2', 'matrix', 'fp64', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'fp32', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'tf32', 'emulated', 'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'bf16', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'fp16', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'fp8',  'absent',   'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'fp4',  'absent',   'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'int8', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'matrix', 'int4', 'emulated', 'amd-cdna2-isa'),
  ('cdna2', 'vector', 'fp64', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'vector', 'fp32', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'vector', 'tf32', 'emulated', 'amd-cdna2-isa'),
  ('cdna2', 'vector', 'bf16', 'emulated', 'amd-cdna2-isa'),
  ('cdna2', 'vector', 'fp16', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'vector', 'fp8',  'absent',   'amd-cdna2-isa'),
  ('cdna2', 'vector', 'fp4',  'absent',   'amd-cdna2-isa'),
  ('cdna2', 'vector', 'int8', 'native',   'amd-cdna2-isa'),
  ('cdna2', 'vector', 'int4', 'native',   'amd-cdna2-isa'),

  -- CDNA 3 (MI300) Matrix Cores: adds XF32 (TF32) and FP8 (FNUZ)
  ('cdna3', 'matrix', 'fp64', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'fp32', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'tf32', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'bf16', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'fp16', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'fp8',  'native',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'fp4',  'absent',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'int8', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'matrix', 'int4', 'emulated', 'amd-cdna3-isa'),
  ('cdna3', 'vector', 'fp64', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'vector', 'fp32', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'vector', 'tf32', 'emulated', 'amd-cdna3-isa'),
  ('cdna3', 'vector', 'bf16', 'emulated', 'amd-cdna3-isa'),
  ('cdna3', 'vector', 'fp16', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'vector', 'fp8',  'emulated', 'amd-cdna3-isa'),
  ('cdna3', 'vector', 'fp4',  'absent',   'amd-cdna3-isa'),
  ('cdna3', 'vector', 'int8', 'native',   'amd-cdna3-isa'),
  ('cdna3', 'vector', 'int4', 'native',   'amd-cdna3-isa'),

  -- RDNA 2: no matrix units at all
  ('rdna2', 'matrix', 'fp64', 'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'fp32', 'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'tf32', 'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'bf16', 'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'fp16', 'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'fp8',  'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'fp4',  'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'int8', 'absent',   'amd-rdna2-isa'),
  ('rdna2', 'matrix', 'int4', 'absent',   'amd-rdna2-isa'),
  ('rdna2', 'vector', 'fp64', 'native',   'amd-rdna2-isa'),
  ('rdna2', 'vector', 'fp32', 'native',   'amd-rdna2-isa'),
  ('rdna2', 'vector', 'tf32', 'emulated', 'amd-rdna2-isa'),
  ('rdna2', 'vector', 'bf16', 'emulated', 'amd-rdna2-isa'),
  ('rdna2', 'vector', 'fp16', 'native',   'amd-rdna2-isa'),
  ('rdna2', 'vector', 'fp8',  'absent',   'amd-rdna2-isa'),
  ('rdna2', 'vector', 'fp4',  'absent',   'amd-rdna2-isa'),
  ('rdna2', 'vector', 'int8', 'native',   'amd-rdna2-isa'),
  ('rdna2', 'vector', 'int4', 'native',   'amd-rdna2-isa'),

  -- RDNA 3: WMMA f16 / bf16 / iu8 / iu4
  ('rdna3', 'matrix', 'fp64', 'absent',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'fp32', 'absent',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'tf32', 'absent',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'bf16', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'fp16', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'fp8',  'absent',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'fp4',  'absent',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'int8', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'matrix', 'int4', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'fp64', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'fp32', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'tf32', 'emulated', 'amd-rdna3-isa'),
  ('rdna3', 'vector', 'bf16', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'fp16', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'fp8',  'absent',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'fp4',  'absent',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'int8', 'native',   'amd-rdna3-isa'),
  ('rdna3', 'vector', 'int4', 'native',   'amd-rdna3-isa');

-- Products. units = compute units; boost_clock_ghz = peak engine clock.
INSERT INTO product (name, short_name, vendor, arch, segment, memory_gib, memory_bandwidth_gbs, tdp_w, units, boost_clock_ghz, source) VALUES
  -- 120 CUs, 1502 MHz, 32 GB HBM2, 1228.8 GB/s (4096-bit x 2.4 Gbps), 300 W.
  ('AMD Instinct MI100', 'mi100', 'AMD', 'cdna1', 'datacenter', 32, 1228.8, 300, 120, 1.502, 'amd-mi100-datasheet'),
  -- 104 CUs, 1700 MHz, 64 GB HBM2e, 1638.4 GB/s (4096-bit x 3.2 Gbps), 300 W.
  ('AMD Instinct MI210', 'mi210', 'AMD', 'cdna2', 'datacenter', 64, 1638.4, 300, 104, 1.7, 'amd-mi210-datasheet'),
  -- 220 CUs (two GCDs), 1700 MHz, 128 GB HBM2e, 3276.8 GB/s (8192-bit x 3.2 Gbps).
  -- Board power 500 W (560 W peak; 500 stored).
  ('AMD Instinct MI250X', 'mi250x', 'AMD', 'cdna2', 'datacenter', 128, 3276.8, 500, 220, 1.7, 'amd-mi250x-datasheet'),
  -- 304 CUs, 2100 MHz, 192 GB HBM3, 5.3 TB/s, 750 W.
  ('AMD Instinct MI300X', 'mi300x', 'AMD', 'cdna3', 'datacenter', 192, 5300, 750, 304, 2.1, 'amd-mi300x-datasheet'),
  -- 80 CUs, boost up to 2250 MHz (game clock 2015), 16 GB GDDR6, 512 GB/s, 300 W board power.
  ('AMD Radeon RX 6900 XT', 'rx-6900-xt', 'AMD', 'rdna2', 'consumer', 16, 512, 300, 80, 2.25, 'amd-rx6900xt-specs'),
  -- 96 CUs, boost up to 2500 MHz (game clock 2300), 24 GB GDDR6, 960 GB/s, 355 W board power.
  ('AMD Radeon RX 7900 XTX', 'rx-7900-xtx', 'AMD', 'rdna3', 'consumer', 24, 960, 355, 96, 2.5, 'amd-rx7900xtx-specs');

INSERT INTO peak (product, format, dense, op_class, source) VALUES
  -- MI100: FP64 11.5 (vector; no FP64 MFMA), FP32 vector 23.1, FP32 matrix 46.1, FP16 184.6,
  -- BF16 92.3, INT8 184.6, INT4 184.6 (printed as "INT4/INT8"; runs on the INT8 MFMA path).
  ('AMD Instinct MI100', 'fp64', 11.5,  'vector', 'amd-mi100-datasheet'),
  ('AMD Instinct MI100', 'fp32', 46.1,  'matrix', 'amd-mi100-datasheet'),
  ('AMD Instinct MI100', 'bf16', 92.3,  'matrix', 'amd-mi100-datasheet'),
  ('AMD Instinct MI100', 'fp16', 184.6, 'matrix', 'amd-mi100-datasheet'),
  ('AMD Instinct MI100', 'int8', 184.6, 'matrix', 'amd-mi100-datasheet'),
  ('AMD Instinct MI100', 'int4', 184.6, 'matrix', 'amd-mi100-datasheet'),

  -- MI210: FP64 vector 22.6, FP64 matrix 45.3, FP32 vector 22.6, FP32 matrix 45.3 (packed FP32
  -- vector also 45.3), FP16 181.0, BF16 181.0, INT8 181.0, INT4 181.0 (INT8 MFMA path).
  ('AMD Instinct MI210', 'fp64', 45.3,  'matrix', 'amd-mi210-datasheet'),
  ('AMD Instinct MI210', 'fp32', 45.3,  'matrix', 'amd-mi210-datasheet'),
  ('AMD Instinct MI210', 'bf16', 181.0, 'matrix', 'amd-mi210-datasheet'),
  ('AMD Instinct MI210', 'fp16', 181.0, 'matrix', 'amd-mi210-datasheet'),
  ('AMD Instinct MI210', 'int8', 181.0, 'matrix', 'amd-mi210-datasheet'),
  ('AMD Instinct MI210', 'int4', 181.0, 'matrix', 'amd-mi210-datasheet'),

  -- MI250X: FP64 vector 47.9, FP64 matrix 95.7, FP32 vector 47.9, FP32 matrix 95.7 (packed FP32
  -- 95.7), FP16 383.0, BF16 383.0, INT8 383.0, INT4 383.0 (INT8 MFMA path).
  ('AMD Instinct MI250X', 'fp64', 95.7,  'matrix', 'amd-mi250x-datasheet'),
  ('AMD Instinct MI250X', 'fp32', 95.7,  'matrix', 'amd-mi250x-datasheet'),
  ('AMD Instinct MI250X', 'bf16', 383.0, 'matrix', 'amd-mi250x-datasheet'),
  ('AMD Instinct MI250X', 'fp16', 383.0, 'matrix', 'amd-mi250x-datasheet'),
  ('AMD Instinct MI250X', 'int8', 383.0, 'matrix', 'amd-mi250x-datasheet'),
  ('AMD Instinct MI250X', 'int4', 383.0, 'matrix', 'amd-mi250x-datasheet'),

  -- MI300X (dense column; the datasheet's sparsity column doubles FP16/BF16/FP8/INT8/TF32):
  -- FP64 vector 81.7, FP64 matrix 163.4, FP32 vector 163.4, FP32 matrix 163.4, TF32 653.7,
  -- FP16 1307.4, BF16 1307.4, FP8 2614.9, INT8 2614.9. No INT4 on CDNA 3.
  ('AMD Instinct MI300X', 'fp64', 163.4,  'matrix', 'amd-mi300x-datasheet'),
  ('AMD Instinct MI300X', 'fp32', 163.4,  'matrix', 'amd-mi300x-datasheet'),
  ('AMD Instinct MI300X', 'tf32', 653.7,  'matrix', 'amd-mi300x-datasheet'),
  ('AMD Instinct MI300X', 'bf16', 1307.4, 'matrix', 'amd-mi300x-datasheet'),
  ('AMD Instinct MI300X', 'fp16', 1307.4, 'matrix', 'amd-mi300x-datasheet'),
  ('AMD Instinct MI300X', 'fp8',  2614.9, 'matrix', 'amd-mi300x-datasheet'),
  ('AMD Instinct MI300X', 'int8', 2614.9, 'matrix', 'amd-mi300x-datasheet'),

  -- RX 6900 XT: AMD publishes peak single precision 23.04 and half precision 46.08 TFLOPS
  -- (80 CU x 64 lanes x 2 x 2.25 GHz, x2 packed FP16). INT8/INT4 derived from AMD GPUOpen's
  -- per-CU table for RDNA 2 (dot instructions, 512 IU8 / 1024 IU4 ops per clock per CU):
  -- 80 x 512 x 2.25 GHz = 92.16 TOPS, 80 x 1024 x 2.25 = 184.32 TOPS. FP64 rate not published
  -- by AMD -> no row.
  ('AMD Radeon RX 6900 XT', 'fp32', 23.04,  'vector', 'amd-rx6900xt-specs'),
  ('AMD Radeon RX 6900 XT', 'fp16', 46.08,  'vector', 'amd-rx6900xt-specs'),
  ('AMD Radeon RX 6900 XT', 'int8', 92.16,  'vector', 'amd-gpuopen-rdna4-matrix-cores'),
  ('AMD Radeon RX 6900 XT', 'int4', 184.32, 'vector', 'amd-gpuopen-rdna4-matrix-cores'),

  -- RX 7900 XTX: AMD publishes peak single precision 61.4 TFLOPS (96 CU x 64 x 2 (dual issue) x
  -- 2 x 2.5 GHz) and peak half precision 122.8 TFLOPS. GPUOpen's per-CU table for RDNA 3 gives
  -- WMMA FP16 = BF16 = IU8 = 512 and IU4 = 1024 ops per clock per CU, so BF16 and INT8 run at the
  -- published FP16 rate (122.8) and INT4 at twice it (245.6): derived. FP64 not published -> no row.
  ('AMD Radeon RX 7900 XTX', 'fp32', 61.4,  'vector', 'amd-rx7900xtx-specs'),
  ('AMD Radeon RX 7900 XTX', 'fp16', 122.8, 'matrix', 'amd-rx7900xtx-specs'),
  ('AMD Radeon RX 7900 XTX', 'bf16', 122.8, 'matrix', 'amd-gpuopen-rdna4-matrix-cores'),
  ('AMD Radeon RX 7900 XTX', 'int8', 122.8, 'matrix', 'amd-gpuopen-rdna4-matrix-cores'),
  ('AMD Radeon RX 7900 XTX', 'int4', 245.6, 'matrix', 'amd-gpuopen-rdna4-matrix-cores');
