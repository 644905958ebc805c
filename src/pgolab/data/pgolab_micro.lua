-- pgolab's sysbench microbenchmarks that stock sysbench 1.0 does not ship.
-- Tables come from oltp_common (sbtestN with PRIMARY KEY id and index k_1 on k). With --tables=N
-- each thread prepares the statement on every table and each event picks one, as the stock scripts do.
-- Usage: sysbench pgolab_micro.lua --micro=NAME [--inlist=100] [--range_size=100] run

require("oltp_common")

sysbench.cmdline.options.micro = {"Microbenchmark to run", "points-covered-pk"}
sysbench.cmdline.options.inlist = {"Number of keys in an IN-list", 100}
sysbench.cmdline.options.hot_rows = {"Size of the hot set for hot-points", 100}

-- kind: inlist (an IN-list of keys), range (BETWEEN ? AND ?), one (a single hot row),
-- none (no parameters).
local MICRO = {
   ["hot-points"] = {kind = "inlist", keys = "hot",
      sql = "SELECT id, k, c, pad FROM {table} WHERE id IN (%s)"},
   ["points-covered-pk"] = {kind = "inlist", sql = "SELECT id FROM {table} WHERE id IN (%s)"},
   ["points-notcovered-pk"] = {kind = "inlist", sql = "SELECT sum(length(c)) FROM {table} WHERE id IN (%s)"},
   ["points-covered-si"] = {kind = "inlist", sql = "SELECT count(id) FROM {table} WHERE k IN (%s)"},
   ["points-notcovered-si"] = {kind = "inlist", sql = "SELECT sum(length(c)) FROM {table} WHERE k IN (%s)"},
   ["range-covered-pk"] = {kind = "range", sql = "SELECT sum(id) FROM {table} WHERE id BETWEEN ? AND ?"},
   ["range-notcovered-pk"] = {kind = "range",
      sql = "SELECT sum(length(c)) FROM {table} WHERE id BETWEEN ? AND ?"},
   ["range-covered-si"] = {kind = "range", sql = "SELECT sum(k) FROM {table} WHERE k BETWEEN ? AND ?"},
   ["range-notcovered-si"] = {kind = "range",
      sql = "SELECT sum(length(c)) FROM {table} WHERE k BETWEEN ? AND ?"},
   ["read-only-count"] = {kind = "range", sql = "SELECT count(*) FROM {table} WHERE id BETWEEN ? AND ?"},
   ["scan"] = {kind = "none", sql = "SELECT count(*) FROM {table} WHERE length(c) < 0"},
   ["update-one"] = {kind = "one", sql = "UPDATE {table} SET k = k + 1 WHERE id = ?"},
   ["update-inlist"] = {kind = "inlist", sql = "UPDATE {table} SET k = k + 1 WHERE id IN (%s)"},
}

function thread_init()
   local spec = MICRO[sysbench.opt.micro]
   if spec == nil then
      error("unknown --micro=" .. tostring(sysbench.opt.micro))
   end
   drv = sysbench.sql.driver()
   con = drv:connect()
   micro = spec
   local sql = spec.sql
   local n = 0
   if spec.kind == "inlist" then
      n = sysbench.opt.inlist
      sql = string.format(sql, string.rep("?, ", n - 1) .. "?")
   elseif spec.kind == "range" then
      n = 2
   elseif spec.kind == "one" then
      n = 1
   end
   stmts, params = {}, {}
   for t = 1, sysbench.opt.tables do
      stmts[t] = con:prepare((sql:gsub("{table}", "sbtest" .. t)))
      params[t] = {}
      for j = 1, n do
         params[t][j] = stmts[t]:bind_create(sysbench.sql.type.INT)
      end
      if n > 0 then
         stmts[t]:bind_param(unpack(params[t]))
      end
   end
end

function thread_done()
   for t = 1, #stmts do
      stmts[t]:close()
   end
   con:disconnect()
end

function event()
   local kind = micro.kind
   -- One table draws no number, so a one-table run keeps the row sequence of its seed.
   local t = 1
   if #stmts > 1 then
      t = sysbench.rand.uniform(1, #stmts)
   end
   local p = params[t]
   if kind == "inlist" then
      local top = sysbench.opt.table_size
      if micro.keys == "hot" then
         top = sysbench.opt.hot_rows
      end
      for j = 1, #p do
         p[j]:set(sysbench.rand.default(1, top))
      end
   elseif kind == "range" then
      local first = sysbench.rand.default(1, sysbench.opt.table_size)
      p[1]:set(first)
      p[2]:set(first + sysbench.opt.range_size - 1)
   elseif kind == "one" then
      p[1]:set(1)
   end
   stmts[t]:execute()
end
