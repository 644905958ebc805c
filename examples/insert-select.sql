-- The version-series study's statement shape, INSERT INTO ... SELECT from one table into another,
-- as a microbenchmark: pgolab bench ... --micro examples/insert-select.sql
-- Each event runs the three statements in order; the figures are per statement. DELETE rather than
-- TRUNCATE: with TRUNCATE, two servers of one binary (Debian's mariadbd) differed 2.2x in QPS over
-- two blocks while their cost agreed within 0.5 %; with DELETE they agreed within about 10 % slice
-- to slice. Why TRUNCATE split them was not measured. It runs on MariaDB, MySQL and PostgreSQL
-- alike. Meant for one thread: at several, two connections may race to create the table the first
-- time.
-- 1,000 rows per event keep cost mode (a simulation, about 50x slower) within minutes.
CREATE TABLE IF NOT EXISTS pgolab_copy AS SELECT * FROM sbtest1 WHERE 1 = 0;
DELETE FROM pgolab_copy;
INSERT INTO pgolab_copy SELECT * FROM sbtest1 WHERE id <= 1000;
