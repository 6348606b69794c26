
declare
  m date := date_trunc('month', from_month)::date;
  last date := (date_trunc('month', until_month) + make_interval(months => months_ahead))::date;
  parent_schema text;
  parent_name text;
  name text;
  created int := 0;
begin
  -- A month's partition sits beside its parent, named <parent>_YYYY_MM.
  select n.nspname, c.relname into parent_schema, parent_name
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.oid = parent;
  while m <= last loop
    name := format('%I.%I', parent_schema, parent_name || '_' || to_char(m, 'YYYY_MM'));
    if to_regclass(name) is null then
      execute format('create table %s partition of %s for values from (%L) to (%L)',
                     name, parent, m::timestamptz, (m + interval '1 month')::timestamptz);
      perform public.herald_restrict_table(name::regclass);
      created := created + 1;
    end if;
    m := (m + interval '1 month')::date;
  end loop;
  return created;
end
